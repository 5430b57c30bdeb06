// Options for titan's listening sockets: SO_REUSEADDR (a restarted agent binds at once while old
// connections linger in TIME_WAIT) and never SO_REUSEPORT, which cpp-httplib sets by default:
// with it a second `titan agent --port P` "starts" on a taken port and the kernel alternates
// scrapes between the two. Pass to httplib::Server::set_socket_options before binding.
#pragma once

#include <sys/socket.h>

namespace titan {

inline void SetListenSocketOptions(int fd) {
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

}  // namespace titan
