/* Layout probe for the socket bindings (socket_h and the structs the refill socket uses). */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "layout_probe.h"

int main(void)
{
	S(msghdr);
	F(msghdr, msg_name);
	F(msghdr, msg_namelen);
	F(msghdr, msg_iov);
	F(msghdr, msg_iovlen);
	F(msghdr, msg_control);
	F(msghdr, msg_controllen);
	F(msghdr, msg_flags);

	S(cmsghdr);
	F(cmsghdr, cmsg_len);
	F(cmsghdr, cmsg_level);
	F(cmsghdr, cmsg_type);

	S(iovec);
	F(iovec, iov_base);
	F(iovec, iov_len);

	S(pollfd);
	F(pollfd, fd);
	F(pollfd, events);
	F(pollfd, revents);

	C32(AF_UNIX);
	C32(SOCK_STREAM);
	C32(SOCK_NONBLOCK);
	C32(SOCK_CLOEXEC);
	C32(SOL_SOCKET);
	C32(SCM_RIGHTS);
	C32(MSG_CTRUNC);
	C32(MSG_NOSIGNAL);
	C32(MSG_DONTWAIT);
	C32(MSG_CMSG_CLOEXEC);
	C32(POLLIN);
	C32(EFD_CLOEXEC);
	return 0;
}
