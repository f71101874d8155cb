/*
 * serial.c - the board's UART as the relay sees it: QEMU's -serial on a
 * unix or TCP socket (QEMU listening, the relay connecting), or a tty device
 * (a real board's USB serial adapter, or a pty), put in raw mode. Reads and
 * writes never block: frames to the board wait in a bounded buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "el_platform.h"
#include "el_relay.h"

static int connect_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof a.sun_path)
		return -1;
	memcpy(a.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int connect_tcp(const char *hostport)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	if (colon == NULL || (size_t)(colon - hostport) >= sizeof host)
		return -1;
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
		return -1;
	int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int open_tty(const char *path)
{
	int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios t;
	if (fd >= 0 && tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
	return fd;
}

void el_relay_uart_connect(struct el_relay *r)
{
	errno = 0; /* getaddrinfo's failures set none */
	int fd = strncmp(r->uart, "unix:", 5) == 0 ? connect_unix(r->uart + 5)
		 : strncmp(r->uart, "tcp:", 4) == 0 ? connect_tcp(r->uart + 4)
		 : open_tty(r->uart);
	if (fd < 0) {
		/* Retried every RECONNECT_MS, silently it was: a wrong --uart
		 * looked like a board that never spoke (an outside tester). Said
		 * at the first failure, when the error changes, and once a
		 * minute while it lasts. */
		const int err = errno != 0 ? errno : EIO;
		const uint64_t now = el_now_ms();
		if (err != r->uart_errno || now - r->uart_said_ms >= 60000) {
			el_log(EL_LOG_WARN, "relay: cannot open the board's UART %s: %s; retrying "
			       "(said again once a minute)", r->uart, strerror(err));
			r->uart_errno = err;
			r->uart_said_ms = now;
		}
		return;
	}
	r->uart_errno = 0;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	r->uart_fd = fd;
	r->tx_len = 0;
	el_bm_deframer_reset(&r->rx);
	r->st.uart_connects++;
	el_log(EL_LOG_INFO, "relay: board's UART connected (%s)", r->uart);
	el_relay_board_up(r, true);
}

void el_relay_uart_close(struct el_relay *r, const char *why)
{
	if (r->uart_fd >= 0) {
		close(r->uart_fd);
		r->uart_fd = -1;
		if (strcmp(why, "stopping") == 0)
			el_log(EL_LOG_INFO, "relay: stopping: board's UART (%s) and peers closed",
			       r->uart);
		else
			el_log(EL_LOG_WARN, "relay: board's UART %s (%s); peers dropped until it is "
			       "back", why, r->uart);
		el_relay_board_up(r, false);
	}
}

bool el_relay_uart_read(struct el_relay *r)
{
	uint8_t buf[4096];
	for (;;) {
		ssize_t n = read(r->uart_fd, buf, sizeof buf);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return false;
		if (n < 0)
			return true;
		for (ssize_t i = 0; i < n; i++) {
			uint32_t len = el_bm_deframer_feed(&r->rx, buf[i]);
			if (len > 0)
				el_relay_from_board(r, r->rx_buf, len);
		}
	}
}

static void put(void *ctx, uint8_t b)
{
	struct el_relay *r = ctx;
	r->tx[r->tx_len++] = b;
}

void el_relay_uart_send(struct el_relay *r, const uint8_t *msg, uint32_t len)
{
	if (r->uart_fd < 0 || sizeof r->tx - r->tx_len < EL_BM_FRAME_WIRE_MAX(len)) {
		r->st.uart_dropped++;
		return;
	}
	el_bm_frame_put(msg, len, put, r);
	r->st.to_uart++;
	el_relay_uart_flush(r);
}

void el_relay_uart_flush(struct el_relay *r)
{
	while (r->uart_fd >= 0 && r->tx_len > 0) {
		ssize_t n = write(r->uart_fd, r->tx, r->tx_len);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				el_relay_uart_close(r, "closed");
			return;
		}
		memmove(r->tx, r->tx + n, r->tx_len - (size_t)n);
		r->tx_len -= (uint32_t)n;
	}
}
