// A check of our btvirt patches, built by build-btvirt.sh with AddressSanitizer against the
// patched emulator sources and run before btvirt is used: a virtual controller's scan is
// disabled (an HCI command read from its vhci descriptor) in the same mainloop turn as the timer
// that reports the advertisers already on air falls due (btvirt-scan-first-report.patch).
//
// BlueZ's mainloop frees a descriptor's entry when it is removed, and dispatches the rest of an
// epoll batch from the entries it read before: a timer removed by an earlier callback of the same
// batch is called after its free. btvirt crashed so (a general protection fault, every virtual
// controller gone) in the VM rig when the kernel disabled a passive scan 100 ms after enabling
// it. The command here comes through a pipe made ready before the timer, so that both are in one
// batch, the pipe first; with the timer removed by the scan disable, AddressSanitizer reports
// the use after free and the check fails.

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/uio.h>
#include <sys/epoll.h>

#include "lib/bluetooth.h"
#include "src/shared/mainloop.h"
#include "src/shared/timeout.h"
#include "src/shared/crypto.h"
#include "emulator/btdev.h"

// bt_crypto_new opens an AF_ALG socket, which this machine's kernel may lack (a CI VM's does);
// a scan uses no cryptography, so src/shared/crypto.c is left out and these stand in for it.
static int no_crypto;
struct bt_crypto *bt_crypto_new(void) { return (struct bt_crypto *) &no_crypto; }
void bt_crypto_unref(struct bt_crypto *crypto) {}
bool bt_crypto_random_bytes(struct bt_crypto *crypto, void *buf, uint8_t num_bytes) { return false; }
bool bt_crypto_e(struct bt_crypto *crypto, const uint8_t key[16], const uint8_t plaintext[16],
		 uint8_t encrypted[16]) { return false; }
bool bt_crypto_ah(struct bt_crypto *crypto, const uint8_t k[16], const uint8_t r[3], uint8_t hash[3])
{
	return false;
}

static struct btdev *scanner;
static int pipe_fds[2];

static void discard(const struct iovec *iov, int iovlen, void *user_data)
{
}

static void command(uint16_t opcode, const uint8_t *params, uint8_t plen)
{
	uint8_t packet[4 + 255] = { 0x01, opcode & 0xff, opcode >> 8, plen };

	memcpy(packet + 4, params, plen);
	btdev_receive_h4(scanner, packet, 4 + plen);
}

static void quit(int id, void *user_data)
{
	mainloop_quit();
}

static void disable_scan(int fd, uint32_t events, void *user_data)
{
	const uint8_t disable[] = { 0x00, 0x00 };
	char byte;

	if (read(fd, &byte, 1) != 1)
		exit(2);
	mainloop_remove_fd(fd);
	command(0x200c, disable, sizeof(disable));
	// Long enough for anything left in the batch, or armed after it, to run.
	mainloop_add_timeout(300, quit, NULL, NULL);
}

int main(void)
{
	const uint8_t enable[] = { 0x01, 0x00 };
	const struct timespec past_the_report = { 0, 250 * 1000 * 1000 };

	mainloop_init();
	scanner = btdev_create(BTDEV_TYPE_LE, 0x0000);
	if (!scanner || pipe(pipe_fds) < 0)
		return 2;
	btdev_set_send_handler(scanner, discard, NULL);
	// The scan enabled: the first report's timer is armed (SCAN_FIRST_REPORT_MS).
	command(0x200c, enable, sizeof(enable));
	mainloop_add_fd(pipe_fds[0], EPOLLIN, disable_scan, NULL, NULL);
	// The command is ready first, then the timer falls due: one batch, in that order.
	if (write(pipe_fds[1], "x", 1) != 1)
		return 2;
	nanosleep(&past_the_report, NULL);
	mainloop_run();
	btdev_destroy(scanner);
	printf("btvirt-scan-report-test: a scan disabled as its first report falls due: ok\n");
	return 0;
}
