// WorkPool: a few threads for handler work that must not run on an event loop: work that waits
// for locks other threads may hold for a long time, or that renders megabytes. A handler
// co_awaits Run(fn); fn runs on a pool thread while the loop goes on serving other connections,
// and the handler resumes on its own loop with fn's result.
//
// Thread safety: Run may be called from any event loop's coroutine. fn runs on a pool thread,
// concurrently with the loops and with other jobs: it may touch only thread-safe state (never
// the Exchange, whose connection lives on the loop), and its result is moved back to the loop.
//
// Shutdown order: Close() (also the destructor) lets every job already queued finish and deliver
// its result; jobs submitted afterwards run on the submitting loop itself. Close the pool
// *before* stopping the Server whose handlers use it: results are posted to the server's loops,
// which must still exist.
#pragma once

#include <mutex>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace titan::http {

class WorkPool {
 public:
  explicit WorkPool(int threads);
  ~WorkPool();  // Close()
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Runs fn() on a pool thread; the calling coroutine resumes on its own executor with the
  // result. fn must not throw. Jobs start in the order submitted. Keep the awaitable in a named
  // variable (`auto job = pool.Run(...); co_await std::move(job);`): GCC 12 destroys a
  // temporary's captures twice when the call sits inside the co_await expression.
  template <typename F>
  boost::asio::awaitable<std::invoke_result_t<F&>> Run(F fn) {
    using R = std::invoke_result_t<F&>;
    static_assert(!std::is_void_v<R>, "return a value (a bool will do)");
    return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(R)>(
        [this](auto handler, F job) {
          auto loop = boost::asio::get_associated_executor(handler);
          auto task = [handler = std::move(handler), job = std::move(job), loop]() mutable {
            R result = job();
            boost::asio::post(loop,
                              [handler = std::move(handler), result = std::move(result)]() mutable {
                                std::move(handler)(std::move(result));
                              });
          };
          std::lock_guard<std::mutex> lock(mutex_);
          if (closed_) {
            boost::asio::post(loop, std::move(task));
          } else {
            boost::asio::post(pool_, std::move(task));
          }
        },
        boost::asio::use_awaitable, std::move(fn));
  }

  // Finishes the queued jobs and joins the threads. Idempotent.
  void Close();

 private:
  std::mutex mutex_;  // orders submissions against Close()
  bool closed_ = false;
  boost::asio::thread_pool pool_;
};

}  // namespace titan::http
