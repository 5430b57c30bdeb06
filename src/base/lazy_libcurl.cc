// libcurl, loaded when it is first called instead of when titan starts.
//
// Linking libcurl makes the dynamic loader map it and its ~27 dependencies (GnuTLS, Kerberos,
// LDAP, RTMP, SSH, ...) at every start of every titan command: 7 of the 8 ms `titan --version`
// takes, paid also by the commands that never make an HTTP request (a whole `titan trace
// analyze` of one 54 MB rank takes ~75 ms). Only the etcd, S3 and Kubernetes clients use
// libcurl. This file defines the libcurl functions they call; the first call loads libcurl.so.4
// (dlopen), runs curl_global_init once, and every call forwards to the real function. Callers
// include <curl/curl.h> and use libcurl as documented, nothing else changes.
//
// Errors: when libcurl cannot be loaded, one line on stderr says why and what to install;
// curl_global_init then returns CURLE_FAILED_INIT, curl_easy_init and curl_slist_append return
// null, and the other functions (which need a handle from curl_easy_init) are never reached.
// Thread safety: loading happens once (std::call_once); the functions are libcurl's.
#define CURL_DISABLE_TYPECHECK  // the type-checking macros would rename the definitions below
#include <curl/curl.h>
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace {

constexpr const char* kLibcurl = "libcurl.so.4";

struct Libcurl {
  bool loaded = false;
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  void (*easy_reset)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
};

template <typename F>
bool Resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

const Libcurl& Api() {
  static Libcurl api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen(kLibcurl, RTLD_NOW | RTLD_LOCAL);
    Libcurl a;
    bool ok = lib != nullptr && Resolve(lib, "curl_global_init", &a.global_init) &&
              Resolve(lib, "curl_easy_init", &a.easy_init) &&
              Resolve(lib, "curl_easy_setopt", &a.easy_setopt) &&
              Resolve(lib, "curl_easy_perform", &a.easy_perform) &&
              Resolve(lib, "curl_easy_cleanup", &a.easy_cleanup) &&
              Resolve(lib, "curl_easy_reset", &a.easy_reset) &&
              Resolve(lib, "curl_easy_getinfo", &a.easy_getinfo) &&
              Resolve(lib, "curl_easy_strerror", &a.easy_strerror) &&
              Resolve(lib, "curl_slist_append", &a.slist_append) &&
              Resolve(lib, "curl_slist_free_all", &a.slist_free_all);
    if (!ok) {
      std::fprintf(stderr,
                   "titan: cannot load %s (%s); HTTP clients (etcd, S3, Kubernetes) need it: "
                   "install libcurl4 (apt install libcurl4)\n",
                   kLibcurl, dlerror());
      return;
    }
    // Once per process, before any other call, as libcurl asks (not thread-safe itself).
    a.loaded = a.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    api = a;
  });
  return api;
}

}  // namespace

extern "C" {

CURLcode curl_global_init(long) { return Api().loaded ? CURLE_OK : CURLE_FAILED_INIT; }

CURL* curl_easy_init() { return Api().loaded ? Api().easy_init() : nullptr; }

CURLcode curl_easy_setopt(CURL* curl, CURLoption option, ...) {
  // The one argument's type follows from the option's range, as in libcurl's own setopt.
  va_list args;
  va_start(args, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = Api().easy_setopt(curl, option, va_arg(args, long));
  } else if (option < CURLOPTTYPE_OFF_T) {  // objects and functions: pointers
    rc = Api().easy_setopt(curl, option, va_arg(args, void*));
  } else if (option < CURLOPTTYPE_BLOB) {
    rc = Api().easy_setopt(curl, option, va_arg(args, curl_off_t));
  } else {
    rc = Api().easy_setopt(curl, option, va_arg(args, void*));
  }
  va_end(args);
  return rc;
}

CURLcode curl_easy_perform(CURL* curl) { return Api().easy_perform(curl); }

void curl_easy_cleanup(CURL* curl) { Api().easy_cleanup(curl); }

void curl_easy_reset(CURL* curl) { Api().easy_reset(curl); }

CURLcode curl_easy_getinfo(CURL* curl, CURLINFO info, ...) {
  va_list args;  // every CURLINFO takes one pointer
  va_start(args, info);
  CURLcode rc = Api().easy_getinfo(curl, info, va_arg(args, void*));
  va_end(args);
  return rc;
}

const char* curl_easy_strerror(CURLcode code) {
  if (!Api().loaded) return "libcurl could not be loaded (see the message above)";
  return Api().easy_strerror(code);
}

curl_slist* curl_slist_append(curl_slist* list, const char* s) {
  return Api().loaded ? Api().slist_append(list, s) : nullptr;
}

void curl_slist_free_all(curl_slist* list) {
  if (Api().loaded) Api().slist_free_all(list);
}

}  // extern "C"
