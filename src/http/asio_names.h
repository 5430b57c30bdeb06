// Names shared by titan's files that use Boost.Asio directly (not a public API of src/http).
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

namespace titan::http {

namespace asio = boost::asio;

// `co_await op(..., kNoThrow)` yields a tuple (error_code, results...) instead of throwing.
inline constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

// A non-blocking socket operation that could not proceed now (the send buffer is full).
inline bool WouldBlock(const boost::system::error_code& ec) {
  return ec == asio::error::would_block || ec == asio::error::try_again;
}

}  // namespace titan::http
