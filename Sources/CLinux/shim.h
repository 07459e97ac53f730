/* Linux interfaces Glibc's Swift module does not cover: epoll, signalfd. */
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <signal.h>
