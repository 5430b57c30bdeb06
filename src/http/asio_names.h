// Names shared by titan's files that use Boost.Asio directly (not a public API of src/http).
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace titan::http {

namespace asio = boost::asio;

// `co_await op(..., kNoThrow)` yields a tuple (error_code, results...) instead of throwing.
inline constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

}  // namespace titan::http
