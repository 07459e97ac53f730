/* Linux interfaces Glibc's Swift module does not cover: epoll, signalfd, control messages. */
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* One recvmsg(2) of a datagram into `buffer`, with the control messages the socket was asked
   for (SO_TIMESTAMPNS, SO_RXQ_OVFL) parsed out of `control`, which the caller allocates once:
   CMSG_FIRSTHDR and CMSG_NXTHDR are macros Swift cannot call. `stamp` gets the time the kernel
   received the datagram (CLOCK_REALTIME; left zero when the kernel sent none), `drops` the
   socket's count of datagrams dropped for a full receive queue (left as it was when none came).
   Returns what recvmsg returns. */
static inline ssize_t collectord_recv_stamped(int fd, void *buffer, size_t length, int flags,
                                              void *control, size_t control_length,
                                              struct timespec *stamp, uint32_t *drops) {
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control, .msg_controllen = control_length };
    stamp->tv_sec = 0;
    stamp->tv_nsec = 0;
    ssize_t n = recvmsg(fd, &msg, flags);
    if (n < 0) return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
        if (c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof *stamp)) {
            memcpy(stamp, CMSG_DATA(c), sizeof *stamp);
        } else if (c->cmsg_type == SO_RXQ_OVFL && c->cmsg_len >= CMSG_LEN(sizeof *drops)) {
            memcpy(drops, CMSG_DATA(c), sizeof *drops);
        }
    }
    return n;
}

/* Room for both control messages above, with their headers and alignment. */
#define COLLECTORD_RECV_CONTROL_SIZE (CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(uint32_t)))
static inline size_t collectord_recv_control_size(void) { return COLLECTORD_RECV_CONTROL_SIZE; }

/* Asks the kernel to stamp each datagram with its receive time and to report the socket's drop
   count (read back by collectord_recv_stamped). SO_TIMESTAMPNS is a macro Swift cannot import.
   Returns 0, or -1 with errno set when either option is refused. */
static inline int collectord_enable_receive_stamps(int fd) {
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) return -1;
    return setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);
}

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The calling thread's effective capabilities as one bit set (bit n: capability n), read with
   capget(2), which glibc does not wrap. Returns 0, or -1 with errno set. */
static inline int collectord_effective_capabilities(uint64_t *effective) {
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return -1;
    *effective = (uint64_t)data[0].effective | ((uint64_t)data[1].effective << 32);
    return 0;
}
