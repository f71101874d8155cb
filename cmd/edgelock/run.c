/*
 * run.c - `edgelock lock` and `edgelock elect`: take a lock (or win an
 * election) and run a command while holding it.
 *
 * `lock -n N NAME` takes one of the N permits of the semaphore NAME instead
 * (at most N holders at once); the rest is the same, the token that permit's.
 *
 * The command sees EDGELOCK_LOCK (the name), EDGELOCK_TOKEN (the fencing
 * token, to pass to every resource it writes) and EDGELOCK_SESSION. While it
 * runs, the library renews the session. When the lease falls into doubt
 * (renewals fail), the command gets SIGTERM when its grace would end at the
 * local deadline, and SIGKILL a little before the deadline itself, so it is
 * dead before the cluster could give the lock to anyone else; the CLI then
 * exits with EL_EXIT_LOCK_LOST. The local deadline is counted on
 * CLOCK_BOOTTIME.
 *
 * A CLI that is itself stopped (SIGSTOP, a debugger) or starved cannot kill
 * anything, nor can one killed by SIGKILL. So a watchdog process, forked
 * before CMD may run and outliving the CLI, keeps the last kill time the CLI
 * sent it and SIGKILLs CMD's whole group when that passes, or at once when
 * the CLI dies without having told it it is done with CMD (watchdog_main).
 * At the kill time it also notes whether CMD had already ended by itself
 * (a zombie the stopped CLI had not reaped): the resumed CLI then exits
 * with CMD's own status and a warning that the lease ran out before the
 * lock was released, not 76, since CMD did finish within its lease.
 *
 * SIGINT or SIGTERM while waiting for the lock ends the wait: the session is
 * closed (the cluster drops the queued request, or releases a grant that
 * crossed the signal), CMD is not run, and the CLI exits 128 + the signal.
 *
 * CMD runs in a process group of its own, and every signal goes to the whole
 * group: CMD's children (a shell script's commands) die with it when the lock
 * is lost. When the CLI runs in the foreground of a terminal, CMD's group
 * gets the terminal while it runs, so ^C and ^Z reach CMD as they would
 * without the CLI; the CLI stops with it on ^Z.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "el_cli.h"
#include "el_client_wire.h"
#include "el_config.h"

struct run_opts {
	const char *name;
	const char *value;
	uint32_t ttl_ms, wait_ms, delay_ms, grace_ms;
	uint32_t permits; /* -n N: a semaphore's limit; 0: a lock */
	bool shared;
	char **cmd; /* NULL: no command */
};

/* The first signal caught (its 128 + N is the exit code), and how many
 * came: a further one ends a close that waits on an unreachable cluster. */
static volatile sig_atomic_t got_signal;
static atomic_uint n_signals;

/* The signals the CLI catches: each ends a wait for the lock, and once CMD
 * runs, is passed on to CMD's group. Left at their default, they would kill
 * the CLI without releasing the lock or telling CMD (a terminal hang-up, a
 * `kill -HUP`), and CMD would run on past the lease. */
static const int caught[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };
#define N_CAUGHT (sizeof caught / sizeof caught[0])
/* Bit i: caught[i] arrived and is not yet passed on to CMD. */
static atomic_uint to_pass;

static void on_signal(int sig)
{
	if (got_signal == 0)
		got_signal = sig;
	atomic_fetch_add(&n_signals, 1u);
	for (unsigned i = 0; i < N_CAUGHT; i++)
		if (caught[i] == sig)
			atomic_fetch_or(&to_pass, 1u << i);
	el_cli_wake();
}

/* SIGCHLD while CMD runs: CMD ended or stopped; supervise looks now. */
static void on_child(int sig)
{
	(void)sig;
	el_cli_wake();
}

/* handler: on_signal in the CLI, SIG_DFL in CMD. */
static void catch_signals(void (*handler)(int))
{
	for (unsigned i = 0; i < N_CAUGHT; i++)
		signal(caught[i], handler);
}

/* Pass each signal caught since the last call on to CMD's group. */
static void pass_signals(pid_t child)
{
	const unsigned bits = atomic_exchange(&to_pass, 0u);
	for (unsigned i = 0; i < N_CAUGHT; i++)
		if (bits & (1u << i))
			kill(-child, caught[i]);
}

static const char LOCK_USAGE[] =
	"usage: edgelock lock [-n N] NAME [--ttl D] [--wait D] [--shared] [--lock-delay D]\n"
	"                     [--grace D] -- CMD [ARGS...]\n"
	"Run CMD while holding the lock NAME (EDGELOCK_LOCK, EDGELOCK_TOKEN and\n"
	"EDGELOCK_SESSION in its environment); release it when CMD ends. -n N:\n"
	"hold one of the N permits of the semaphore NAME instead (at most N holders\n"
	"at once; N from 1 to 8; the first acquire sets N). --ttl: the session\n"
	"lease (10s; the cluster's [limits] max_session_ttl_ms bounds it);\n"
	"--wait: how long to wait for the lock (default: forever; 0: try once);\n"
	"--shared: with other shared holders; --lock-delay: keep the lock from others\n"
	"that long after this session expires (0); --grace: SIGTERM this long before\n"
	"the SIGKILL when the lock is being lost (a fifth of the TTL; shorter than\n"
	"--ttl; 0: SIGKILL alone). An option's value: --ttl 5s or --ttl=5s.\n"
	"Nothing of the CLI's own goes to stdout: it is CMD's.\n"
	"Exit: CMD's status; 75 not acquired; 76 lost while CMD ran (CMD killed),\n"
	"or before it could start (CMD not run); 69 no leader reachable, or the\n"
	"session's lease ran out while waiting; 77 not allowed ([acl], certificate);\n"
	"126 CMD found but not executable; 127 CMD not found;\n"
	"79 NAME is a semaphore with another N (the message names both); 128+N:\n"
	"signal N (INT, TERM, HUP, QUIT, USR1, USR2, ALRM) while opening the session,\n"
	"waiting for the lock or, refused, asking who holds it (given up at once,\n"
	"CMD not run, nothing left held);\n"
	"once CMD runs, they are passed on to it.\n";

static const char ELECT_USAGE[] =
	"usage: edgelock elect NAME VALUE [--ttl D] [--wait D] [--grace D] [-- CMD [ARGS...]]\n"
	"Campaign for NAME and publish VALUE once elected; run CMD as the leader\n"
	"(or, without CMD, lead until interrupted), then resign. Once elected, it\n"
	"says \"edgelock: elected NAME: token N\" on stderr (stdout is CMD's).\n"
	"--ttl, --wait, --grace and the exit codes as for lock; no --json.\n";

#define GRACE_UNSET UINT32_MAX /* no --grace: a fifth of the TTL */

/* The option at argv[*i] that takes a value (-n, --ttl=5s or --ttl 5s, ...)
 * into o: 0, 1 when it is none of them, or EL_EXIT_USAGE, said. */
static int valued_option(int argc, char **argv, int *i, bool with_value, struct run_opts *o)
{
	const char *a = argv[*i];
	if (strcmp(a, "-n") == 0 && !with_value) {
		const char *v = el_cli_opt_value("-n", argc, argv, i);
		char *end = NULL;
		const unsigned long n = v != NULL && *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 0;
		if (end == NULL || *end != '\0' || n < 1 || n > EL_SEM_LIMIT_MAX) {
			fprintf(stderr, "edgelock: -n needs a number of permits, 1 to %u\n",
				(unsigned)EL_SEM_LIMIT_MAX);
			return EL_EXIT_USAGE;
		}
		o->permits = (uint32_t)n;
		return 0;
	}
	static const char *const names[] = {"--ttl", "--wait", "--lock-delay", "--grace"};
	uint32_t *const slots[] = {&o->ttl_ms, &o->wait_ms, &o->delay_ms, &o->grace_ms};
	for (unsigned k = 0; k < sizeof names / sizeof names[0]; k++)
		if (el_cli_opt_is(a, names[k]))
			return el_cli_duration_arg(names[k], el_cli_opt_value(names[k], argc, argv, i),
						   slots[k]);
	return 1;
}

/* Parse "NAME [VALUE] options [-- CMD...]" (VALUE when with_value). */
static int parse(int argc, char **argv, bool with_value, struct run_opts *o, const char *text)
{
	*o = (struct run_opts){ .ttl_ms = 10000, .wait_ms = EL_WAIT_INFINITE,
				.grace_ms = GRACE_UNSET };
	int pos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			o->cmd = i + 1 < argc ? argv + i + 1 : NULL;
			break;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(text, stdout);
			exit(EL_EXIT_OK);
		}
		if (strcmp(a, "--shared") == 0 && !with_value) {
			o->shared = true;
			continue;
		}
		const int rc = valued_option(argc, argv, &i, with_value, o);
		if (rc == 0)
			continue;
		if (rc != 1)
			return rc;
		if (a[0] == '-' || pos > (with_value ? 1 : 0))
			return el_cli_bad_arg(with_value ? "elect" : "lock", a);
		if (pos == 0)
			o->name = a;
		else
			o->value = a;
		pos++;
	}
	if (o->shared && o->permits > 0) {
		fprintf(stderr, "edgelock: lock: --shared and -n exclude each other (a semaphore's "
			"permits are each exclusive)\n");
		return EL_EXIT_USAGE;
	}
	const char *command = with_value ? "elect" : "lock";
	if (o->name == NULL)
		return el_cli_usage(command, "NAME is missing", NULL, text);
	if (with_value && o->value == NULL)
		return el_cli_usage(command, "VALUE is missing", NULL, text);
	if (!with_value && o->cmd == NULL)
		return el_cli_usage(command, "CMD is missing (after --)", NULL, text);
	const int rc = el_cli_name_ok(command, o->name); /* before anything is opened */
	if (rc != 0)
		return rc;
	if (o->grace_ms == GRACE_UNSET) {
		o->grace_ms = o->ttl_ms / 5;
	} else if (o->grace_ms >= o->ttl_ms) {
		/* CMD would get SIGTERM at the first failed renewal, or at once */
		fprintf(stderr, "edgelock %s: --grace must be shorter than --ttl (%" PRIu32 " ms), "
			"not %" PRIu32 " ms: CMD gets SIGTERM that long before the lease would end\n",
			command, o->ttl_ms, o->grace_ms);
		return EL_EXIT_USAGE;
	}
	return 0;
}

/* ---- The watchdog -------------------------------------------------------- */

/* The watchdog of CMD's group (fd < 0: none could be started). */
struct watchdog {
	int fd;          /* the CLI's end of its pipe */
	pid_t pid;       /* 0 once reaped */
	pid_t cmd_group; /* CMD's pid and process group; 0: no CMD */
	uint64_t at;     /* the last kill time sent to it; 0: none yet */
	int fired;       /* DOG_KILLED, DOG_CMD_ENDED or DOG_LATE once it acted */
};

/* How the watchdog ended (its exit status). */
enum {
	DOG_QUIET = 0,     /* the CLI said it is done with CMD */
	DOG_KILLED = 3,    /* its kill time passed while CMD ran: CMD's group killed */
	DOG_CMD_ENDED = 4, /* its kill time passed with CMD already ended (a zombie
			    * the stopped CLI had not reaped): the group killed,
			    * for the children CMD left */
	DOG_CLI_GONE = 5,  /* the CLI died: CMD's group killed */
	DOG_LATE = 6,      /* it ran only past its kill time (stopped itself): CMD's
			    * group killed, maybe after the lease */
};
/* The kill time that says: the CLI is done with CMD (the watchdog exits
 * quietly). A real one is a CLOCK_BOOTTIME reading, never 0. */
#define DOG_DONE 0u

static uint64_t boot_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Whether process pid is known to have ended but not been reaped (a
 * zombie): its state in /proc/PID/stat, "PID (COMM) S ...". Only open and
 * read (async-signal-safe); any doubt is "no". */
static bool is_zombie(pid_t pid)
{
	char path[40] = "/proc/", digits[16];
	size_t len = sizeof "/proc/" - 1, n = 0;
	for (unsigned long v = (unsigned long)pid; n == 0 || v > 0; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	while (n > 0)
		path[len++] = digits[--n];
	memcpy(path + len, "/stat", sizeof "/stat");
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[128]; /* COMM is 15 bytes at most: the state is well within */
	const ssize_t got = read(fd, buf, sizeof buf);
	close(fd);
	ssize_t i = got - 1;
	while (i >= 0 && buf[i] != ')') /* COMM may hold ')': the last one ends it */
		i--;
	return i >= 0 && i + 2 < got && (buf[i + 2] == 'Z' || buf[i + 2] == 'X');
}

/* Kill CMD's whole group and exit with why. */
static _Noreturn void watchdog_kill(pid_t cmd_group, int why)
{
	kill(-cmd_group, SIGKILL);
	_exit(why);
}

/* The watchdog's loop: kill_at is the last time read from rfd; when it
 * passes without a later one, SIGKILL CMD's group (DOG_KILLED, or
 * DOG_CMD_ENDED when CMD had ended by itself before: the CLI tells a loss
 * from a lease that ran out after CMD's end by it). DOG_DONE ends it
 * quietly; the CLI gone (EOF without DONE, or another parent) kills CMD's
 * group, which the kernel's PDEATHSIG would only partly do (CMD, not its
 * children). Only async-signal-safe calls: it was forked from a process
 * with threads. */
static _Noreturn void watchdog_main(int rfd, pid_t cmd_group, pid_t parent)
{
	uint64_t kill_at = UINT64_MAX;
	for (;;) {
		const uint64_t now = boot_ms();
		/* A zombie vouches for CMD's end in time only when this check
		 * runs on time: a watchdog stopped with the rest of the board
		 * and resumed past kill_at may find CMD ended after it (and the
		 * margin before the lease's end is at least 100 ms). */
		if (now >= kill_at && now - kill_at > 100u)
			watchdog_kill(cmd_group, DOG_LATE);
		if (now >= kill_at)
			watchdog_kill(cmd_group, is_zombie(cmd_group) ? DOG_CMD_ENDED : DOG_KILLED);
		if (getppid() != parent)
			watchdog_kill(cmd_group, DOG_CLI_GONE);
		/* poll counts on CLOCK_MONOTONIC, which stops while the machine
		 * sleeps: wake at least every second to read CLOCK_BOOTTIME. */
		const uint64_t wait = kill_at == UINT64_MAX ? 1000u : kill_at - now;
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		if (poll(&p, 1, wait < 1000u ? (int)wait : 1000) <= 0)
			continue;
		uint64_t t;
		const ssize_t n = read(rfd, &t, sizeof t);
		if (n == (ssize_t)sizeof t && t == DOG_DONE)
			_exit(DOG_QUIET);
		if (n == (ssize_t)sizeof t)
			kill_at = t;
		else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			watchdog_kill(cmd_group, DOG_CLI_GONE);
	}
}

/* Fork the watchdog of CMD's group; the CLI's end of its pipe, or -1. It
 * runs in a process group of its own, so that stopping the CLI's group does
 * not stop it, and outlives the CLI (no PDEATHSIG) to kill CMD's group when
 * the CLI dies. */
static int watchdog_start(pid_t cmd_group, pid_t *pid)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	const pid_t parent = getpid();
	*pid = fork();
	if (*pid == 0) {
		setpgid(0, 0);
		if (getppid() != parent)
			watchdog_kill(cmd_group, DOG_CLI_GONE);
		for (int fd = 3; fd < 1024; fd++) /* not the CLI's sockets */
			if (fd != fds[0])
				close(fd);
		watchdog_main(fds[0], cmd_group, parent);
	}
	close(fds[0]);
	if (*pid < 0) {
		*pid = 0;
		close(fds[1]);
		return -1;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	return fds[1];
}

static void sleep_ms(unsigned ms)
{
	const struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* The wake pipe (wake.c), once; a signal that came before it existed
 * wakes it at once. -1 when it cannot be made. */
static int wake_pipe(void)
{
	if (el_cli_wake_fd() < 0)
		return -1;
	if (got_signal != 0)
		el_cli_wake();
	return 0;
}

/* Reap the watchdog if it has ended, waiting up to wait_ms for it; note
 * whether it acted (w->fired). One gone otherwise (killed by someone) is to
 * be replaced (w->at = 0), one that acted is not: its verdict stands. */
static void watchdog_reap(struct watchdog *w, unsigned wait_ms)
{
	for (unsigned waited = 0; w->pid > 0; waited += 5) {
		int st;
		const pid_t r = waitpid(w->pid, &st, WNOHANG);
		if (r == w->pid || (r < 0 && errno == ECHILD)) {
			const int code = r == w->pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			w->pid = 0;
			if (code == DOG_KILLED || code == DOG_CMD_ENDED || code == DOG_LATE)
				w->fired = code;
			else
				w->at = 0;
			return;
		}
		if (waited >= wait_ms)
			return;
		sleep_ms(5);
	}
}

/* Tell the watchdog the CLI is done with CMD (it exits quietly), and reap it. */
static void watchdog_stop(struct watchdog *w)
{
	if (w->fd < 0)
		return;
	const uint64_t done = DOG_DONE;
	if (write(w->fd, &done, sizeof done) != (ssize_t)sizeof done) {
		/* gone already (EPIPE): reaped below */
	}
	close(w->fd);
	w->fd = -1;
	int status;
	while (w->pid > 0 && waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
		;
	w->pid = 0;
}

/* Tell the watchdog the new kill time (the pipe never fills: 8 bytes a
 * turn, read at once). One that is gone (killed by someone: the write
 * fails with EPIPE, SIGPIPE being ignored) is replaced at once, so CMD
 * never runs unwatched while the CLI cannot act. */
static void watchdog_set(struct watchdog *w, uint64_t kill_at)
{
	w->at = kill_at;
	if (w->fd >= 0 && w->pid > 0 &&
	    write(w->fd, &kill_at, sizeof kill_at) == (ssize_t)sizeof kill_at)
		return;
	fprintf(stderr, "edgelock: warning: the watchdog is gone; starting another\n");
	watchdog_stop(w);
	w->fd = watchdog_start(w->cmd_group, &w->pid);
	if (w->fd >= 0 && write(w->fd, &kill_at, sizeof kill_at) == (ssize_t)sizeof kill_at)
		return;
	fprintf(stderr, "edgelock: warning: no watchdog (%s): a stopped or killed CLI could not "
		"kill the command in time\n", strerror(errno));
}

/* ---- Running CMD ---------------------------------------------------------- */

/* Whether CMD is to get the terminal: stdin is one and the CLI's group is
 * its foreground group (not when the CLI itself runs in the background). */
static bool cmd_has_terminal;

/* Make pgrp the foreground group of the terminal on stdin. A process outside
 * the foreground group that does so gets SIGTTOU, which would stop it. */
static void give_terminal(pid_t pgrp)
{
	void (*old)(int) = signal(SIGTTOU, SIG_IGN);
	tcsetpgrp(STDIN_FILENO, pgrp);
	signal(SIGTTOU, old);
}

/* In the child, before exec: CMD's own process group (and the terminal);
 * the kernel kills CMD when the CLI dies, even by SIGKILL, which the CLI
 * cannot catch (its watchdog then kills the rest of CMD's group). CMD does
 * not run until the CLI has started that watchdog and writes a byte to
 * gate: a CLI killed before then leaves no command unwatched. */
static void child_setup(pid_t parent, int gate)
{
	setpgid(0, 0);
	if (cmd_has_terminal)
		give_terminal(getpid());
	/* PDEATHSIG fires when the thread that forked exits: the main thread. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* the CLI died before prctl took effect */
		raise(SIGKILL);
	char go;
	ssize_t n;
	while ((n = read(gate, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1) /* EOF: the CLI died before its watchdog ran */
		_exit(EL_EXIT_SOFTWARE);
	close(gate);
	catch_signals(SIG_DFL);
	signal(SIGPIPE, SIG_DFL); /* CMD gets the default, whatever the CLI has */
}

/* Fork CMD, then its watchdog (dog), then let CMD run; CMD's pid, or -1. */
static pid_t start(char **cmd, const char *name, uint64_t token, uint64_t session,
		   struct watchdog *dog)
{
	char buf[32];
	setenv("EDGELOCK_LOCK", name, 1);
	snprintf(buf, sizeof buf, "%" PRIu64, token);
	setenv("EDGELOCK_TOKEN", buf, 1);
	snprintf(buf, sizeof buf, "%" PRIu64, session);
	setenv("EDGELOCK_SESSION", buf, 1);
	cmd_has_terminal = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) != 0)
		return -1;
	/* Blocked across the fork: a signal the CLI passes to CMD's group
	 * before CMD has reset its handlers would run the CLI's handler in CMD
	 * and be lost (a SIGTERM of a lease in doubt, found by an outside
	 * tester); blocked, it stays pending until CMD has the defaults. */
	sigset_t block, old;
	sigemptyset(&block);
	for (unsigned i = 0; i < N_CAUGHT; i++)
		sigaddset(&block, caught[i]);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	const pid_t parent = getpid();
	const pid_t pid = fork();
	if (pid == 0) {
		close(gate[1]);
		child_setup(parent, gate[0]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "edgelock: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? EL_EXIT_EXEC : EL_EXIT_NOEXEC);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(gate[0]);
	if (pid > 0) {
		/* Here too, so the group exists before the CLI (or the watchdog)
		 * signals it, whichever of the two runs first. */
		setpgid(pid, pid);
		if (cmd_has_terminal)
			give_terminal(pid);
		dog->cmd_group = pid;
		dog->fd = watchdog_start(pid, &dog->pid); /* no fd: the first set says so */
		if (write(gate[1], "", 1) != 1) {
			/* CMD was killed meanwhile: its wait status says so */
		}
	}
	close(gate[1]);
	return pid;
}

/* CMD stopped (^Z stops its group, which has the terminal): stop the CLI too,
 * as the shell expects of its job, and resume CMD when the CLI is resumed. */
static void stopped(pid_t child)
{
	if (!cmd_has_terminal)
		return;
	give_terminal(getpgrp());
	kill(getpid(), SIGTSTP); /* returns once the CLI is continued (fg) */
	give_terminal(child);
	kill(-child, SIGCONT);
}

/* How CMD's run ended, as far as the lease goes: what the CLI says and
 * exits with (finish). */
enum outcome {
	RUN_ENDED,       /* CMD ended (or the hold was interrupted) with the lease held */
	RUN_ENDED_LATE,  /* CMD ended by itself in time, but the lease ran out before
			  * the CLI could release the lock: CMD's status, a warning */
	RUN_KILLED,      /* the CLI signalled CMD as renewals failed, before the deadline */
	RUN_DOG_KILLED,  /* the watchdog killed CMD before the deadline */
	RUN_KILLED_LATE, /* the CLI killed CMD only once the lease was over */
	RUN_LOST_UNSURE, /* CMD ended by itself, the lease lost, not shown to be in time */
	RUN_HOLD_LOST,   /* elect without CMD: leadership lost */
};

/* CMD ended and the CLI had not signalled it before the deadline: did the
 * lease hold until then? The watchdog knows when it acted (once its kill
 * time passed it has acted or is about to: hear which, allowing it a moment
 * if it lags); late: the CLI itself SIGKILLed CMD once the lease was over. */
static enum outcome cmd_ended(el_session *s, struct watchdog *dog, bool late)
{
	if (dog->at != 0 && boot_ms() >= dog->at)
		watchdog_reap(dog, 1000);
	const bool lost = el_session_state(s, NULL) == EL_LEASE_LOST;
	if (dog->fired == DOG_KILLED)
		return RUN_DOG_KILLED;
	if (late || dog->fired == DOG_LATE) /* CMD was alive past the lease, or
					      * nobody watched it then */
		return RUN_KILLED_LATE;
	if (dog->fired == DOG_CMD_ENDED) /* it was a zombie at the kill time */
		return lost ? RUN_ENDED_LATE : RUN_ENDED;
	return lost ? RUN_LOST_UNSURE : RUN_ENDED;
}

/* How long before the local deadline CMD's group gets SIGKILL: the time a
 * kill and its reaping take, with room for a slow machine. */
static uint64_t kill_margin_of(const struct run_opts *o)
{
	return 100u + o->ttl_ms / 100u;
}

/* CMD ended after its SIGTERM while the lease was in doubt: a renewal may
 * still land (the network back, a redial under way). CMD has ended, so
 * waiting is safe; wait until the lease is renewed (true: the lock was
 * never lost, and is released as usual) or lost, or its SIGKILL time comes
 * (then CMD's group, its children, is killed). Exiting at once reported a
 * kept lease as lost and left the lock to expire (an outside tester). */
static bool renewed_in_time(el_session *s, const struct run_opts *o, pid_t child)
{
	const uint64_t kill_margin = kill_margin_of(o);
	for (;;) {
		uint64_t left;
		const enum el_lease_state st = el_session_state(s, &left);
		if (st == EL_LEASE_OK) {
			fprintf(stderr, "edgelock: warning: %s: the lease was renewed again after "
				"the command got SIGTERM and ended (renewals had failed); releasing the "
				"lock\n", o->name);
			return true;
		}
		if (st == EL_LEASE_LOST || left <= kill_margin) {
			kill(-child, SIGKILL);
			return false;
		}
		sleep_ms(20);
	}
}

/* How long supervise may sleep before it looks again (a signal or CMD's
 * end wakes it sooner). It looked every 20 ms: 50 wake-ups a second for
 * as long as CMD held the lock (cli_test, test_idle_holder). Now:
 * - every 5 ms once lost (reaping CMD's group);
 * - every 20 ms in the last 40 ms before the window (the kill margin and
 *   the grace: left <= window) and inside it, where a renewal that fails
 *   gets CMD its SIGTERM and one that lands late moves the watchdog's kill
 *   time, which is the window's end (grace 0: its start);
 * - before that, until 20 ms before the window, a tenth of the TTL at
 *   most (el_cli_nap: a second), so a renewal is seen, and the watchdog
 *   moved on, long before its old kill time (a renewal comes a third into
 *   the lease). */
static uint64_t supervise_nap_ms(uint64_t left, uint64_t window, uint32_t ttl_ms, bool lost)
{
	if (lost)
		return 5u;
	const uint64_t until = left > window ? left - window : 0;
	if (until <= 40u)
		return 20u;
	return until - 20u < ttl_ms / 10u ? until - 20u : ttl_ms / 10u;
}

/* Watch the child and the lease until the child ends (*status): how it
 * ended. Every signal goes to CMD's process group (-child), and when the
 * lease was not kept SIGKILL goes to it even after CMD itself ended, for
 * the children it left behind. */
static enum outcome supervise(el_session *s, pid_t child, const struct run_opts *o,
			      struct watchdog *dog, int *status)
{
	const uint64_t kill_margin = kill_margin_of(o);
	bool termed = false, lost = false, late = false, jeopardy = false;
	(void)wake_pipe(); /* none: nap polls */
	signal(SIGCHLD, on_child); /* from here, CMD's end wakes el_cli_nap */
	for (;;) {
		const pid_t w = waitpid(child, status, WNOHANG | WUNTRACED);
		if (w == child && WIFSTOPPED(*status)) {
			stopped(child);
			continue;
		}
		if (w == child) {
			if (jeopardy && !lost && renewed_in_time(s, o, child))
				jeopardy = false; /* said so: the lock is held, release it */
			const enum outcome out = (lost && !late) || jeopardy ? RUN_KILLED
									      : cmd_ended(s, dog, late);
			if (out != RUN_ENDED)
				kill(-child, SIGKILL);
			signal(SIGCHLD, SIG_DFL);
			return out;
		}
		uint64_t left;
		const enum el_lease_state st = el_session_state(s, &left);
		const uint64_t kill_at = boot_ms() + (left > kill_margin ? left - kill_margin : 0);
		watchdog_reap(dog, 0); /* killed by someone: replaced now */
		if (st != EL_LEASE_LOST && dog->fired == 0 && (dog->at == 0 || kill_at > dog->at + 10u))
			watchdog_set(dog, kill_at); /* the lease moved on, or a new watchdog */
		if (jeopardy && st == EL_LEASE_OK) {
			/* renewed before the deadline: the lock was never lost, and
			 * CMD, warned, may finish or end as it likes; a new doubt
			 * warns it again */
			fprintf(stderr, "edgelock: warning: %s: the lease was renewed again after the "
				"command got SIGTERM (renewals had failed); the lock is still held\n",
				o->name);
			termed = jeopardy = false;
		}
		if (!lost && (st == EL_LEASE_LOST || left <= kill_margin)) {
			kill(-child, SIGKILL);
			lost = true;
			late = st == EL_LEASE_LOST; /* stopped or starved, and no watchdog acted */
		} else if (!termed && st != EL_LEASE_OK && left <= kill_margin + o->grace_ms) {
			kill(-child, SIGTERM);
			termed = jeopardy = true;
		}
		pass_signals(child); /* ^C, SIGTERM, a hang-up, ...: CMD decides */
		el_cli_nap(supervise_nap_ms(left, kill_margin + o->grace_ms, o->ttl_ms, lost));
	}
}

/* The grant may come while renewals fail (its reply crossed a cut link):
 * CMD would start with its SIGTERM due at once, and a side effect at its
 * start would get milliseconds under the lock. Wait until the lease is
 * renewed (or has time enough left), or is lost, or a signal comes. */
static bool lease_settled(el_session *s, const struct run_opts *o)
{
	for (;;) {
		uint64_t left;
		const enum el_lease_state st = el_session_state(s, &left);
		if (st == EL_LEASE_LOST)
			return false;
		if (st == EL_LEASE_OK || left > kill_margin_of(o) + o->grace_ms || got_signal != 0)
			return true;
		sleep_ms(20);
	}
}

static int exit_of(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Hold until interrupted or lost: asleep until a signal, or the lease's
 * end if it is not renewed by then (it looked every 50 ms). */
static enum outcome hold(el_session *s)
{
	(void)wake_pipe();
	for (;;) {
		uint64_t left;
		if (el_session_state(s, &left) == EL_LEASE_LOST)
			return RUN_HOLD_LOST;
		if (got_signal != 0)
			return RUN_ENDED;
		el_cli_nap(left + 1u);
	}
}

/* Why the lock was lost, by outcome: what the CLI knows of when CMD ended. */
static const char *const LOST_WHY[] = {
	[RUN_KILLED] = "(renewals failed and the lease was running out); the command was killed "
		       "before the lease ended",
	[RUN_DOG_KILLED] = "(the lease ran out while the CLI was stopped or the cluster was "
			   "unreachable); its watchdog killed the command before the lease ended",
	[RUN_KILLED_LATE] = "(the lease ended before the CLI could act: it was stopped, or the "
			    "cluster expired the session); the command was killed only then, and "
			    "may have run past the lease",
	[RUN_LOST_UNSURE] = "(the CLI was stopped, or the cluster expired the session); the "
			    "command ended by itself, perhaps after the lease did",
	[RUN_HOLD_LOST] = "(the lease ran out: renewals failed, or the CLI was stopped)",
};

/* The lease was not kept to the end: say so, and exit at once (nothing to
 * give back: the cluster is unreachable or has already expired the session,
 * and a CLI that waited on it could be stopped again). */
static _Noreturn void lease_not_kept(const struct run_opts *o, bool election, enum outcome out,
				     int status)
{
	const char *what = election ? "leadership of" : "lock";
	if (out == RUN_ENDED_LATE)
		fprintf(stderr, "edgelock: warning: %s %s: the command ended (status %d) before the "
			"lease ran out, but the lease ran out before the lock could be released (the "
			"CLI was stopped or the cluster was unreachable)\n", what, o->name,
			exit_of(status));
	else
		fprintf(stderr, "edgelock: %s %s lost %s\n", what, o->name, LOST_WHY[out]);
	fflush(NULL);
	_exit(out == RUN_ENDED_LATE ? exit_of(status) : EL_EXIT_LOCK_LOST);
}

/* Supervise CMD (dog->cmd_group; 0: none, hold the lock instead), then
 * release the lock; the CLI's exit code. */
static int finish(struct el_cli *cli, el_session *s, const struct run_opts *o, bool election,
		  uint64_t token, struct watchdog *dog)
{
	int status = 0;
	const pid_t child = dog->cmd_group;
	const enum outcome out = child > 0 ? supervise(s, child, o, dog, &status) : hold(s);
	watchdog_stop(dog);
	if (child > 0 && cmd_has_terminal)
		give_terminal(getpgrp());
	if (out != RUN_ENDED)
		lease_not_kept(o, election, out, status);
	const int rc = election ? el_resign(s, o->name, token) : el_unlock(s, o->name, token);
	if (rc != EL_OK)
		fprintf(stderr, "edgelock: %s\n", el_client_last_error(cli->client));
	el_session_close(s);
	return child > 0 ? exit_of(status) : EL_EXIT_OK;
}

/* ---- Waiting for the lock, interruptibly ---------------------------------- */

/* The library's calls before the lock is held (el_session_open, the
 * acquire, a close) block for up to --timeout or --wait, 1193 h at most,
 * and take no cancel. Each runs on a thread of its own (a job) while the
 * main thread waits on the wake pipe for its end or a signal: a signal
 * then ends the wait at once (an outside tester's `lock --timeout 30s`
 * towards an endpoint nobody listened on ignored SIGTERM for 30 s). */
struct job {
	void *(*fn)(void *);
	void *arg;
	atomic_bool done;
	pthread_t t;
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	j->fn(j->arg);
	atomic_store(&j->done, true);
	el_cli_wake();
	return NULL;
}

/* Start j->fn(j->arg) on a thread; false when no thread could be started. */
static bool job_start(struct job *j)
{
	atomic_store(&j->done, false);
	return wake_pipe() == 0 && pthread_create(&j->t, NULL, job_main, j) == 0;
}

/* Wait for job j to end (true, joined) or for a signal past the first
 * `seen` (false: j runs on, and the caller leaves by _exit, not exit(),
 * since j's thread is in the library). */
static bool job_until_signal(struct job *j, unsigned seen)
{
	while (!atomic_load(&j->done) && atomic_load(&n_signals) <= seen)
		el_cli_nap(1000u); /* a signal, or the job's end */
	if (!atomic_load(&j->done))
		return false;
	pthread_join(j->t, NULL);
	return true;
}

/* Open the session. */
struct opening {
	el_client *c;
	uint32_t ttl_ms;
	el_session *s;
	int rc;
	char why[1024]; /* the library's last error on the thread, when rc fails */
};

static void *open_main(void *arg)
{
	struct opening *op = arg;
	op->rc = el_session_open(op->c, op->ttl_ms, &op->s);
	if (op->rc != EL_OK)
		snprintf(op->why, sizeof op->why, "%s", el_client_last_error(NULL));
	return NULL;
}

/* el_session_open until it returns or a signal comes: then exit 128 + it
 * at once. Nothing was asked for yet; a session the cluster may open
 * meanwhile holds nothing and expires at its TTL. */
static int open_until_signal(struct el_cli *cli, const struct run_opts *o, el_session **s)
{
	struct opening op = { .c = cli->client, .ttl_ms = o->ttl_ms };
	struct job j = { .fn = open_main, .arg = &op };
	if (!job_start(&j))
		return EL_EFULL;
	if (!job_until_signal(&j, 0)) {
		fprintf(stderr, "edgelock: %s: gave up opening a session for %s (no node answered "
			"yet; nothing was asked for, and a session the cluster may have opened holds "
			"nothing and expires at its TTL)\n", strsignal(got_signal), o->name);
		_exit(128 + got_signal);
	}
	*s = op.s;
	if (op.rc != EL_OK) {
		static char why[sizeof op.why];
		memcpy(why, op.why, sizeof why);
		cli->why = why;
	}
	return op.rc;
}

/* Close the session after a signal: el_session_close on a thread, so that
 * a further signal ends the CLI without waiting out --timeout (the
 * session, no longer renewed, expires at its TTL); 128 + the signal. */
static void *close_main(void *arg)
{
	el_session_close(arg);
	return NULL;
}

static int closed_after_signal(el_session *s, const struct run_opts *o)
{
	const int sig = got_signal;
	fprintf(stderr, "edgelock: %s: gave up waiting for %s\n", strsignal(sig), o->name);
	struct job j = { .fn = close_main, .arg = s };
	if (!job_start(&j))
		el_session_close(s);
	else if (!job_until_signal(&j, atomic_load(&n_signals)))
		_exit(128 + sig);
	return 128 + sig;
}

/* The acquire: a signal meanwhile closes the session on the cluster,
 * keeping its place in the FIFO queue until then (a wait in slices would
 * lose it). el_session_close() must not run while a call is blocked on the
 * session (it frees it under that call), so the main thread sends the
 * close request itself, by id, leaving the session alone, and closes the
 * session only after joining the thread. */
struct acquire {
	el_session *s;
	const struct run_opts *o;
	bool election;
	uint64_t token;
	int rc;
	char why[1024]; /* the library's last error on the thread, when rc fails */
};

static void *acquire_main(void *arg)
{
	struct acquire *a = arg;
	const struct run_opts *o = a->o;
	a->rc = a->election ? el_campaign(a->s, o->name, o->value, (uint32_t)strlen(o->value),
					  o->wait_ms, &a->token)
		: o->permits > 0 ? el_semaphore_acquire(a->s, o->name, o->permits, o->wait_ms, &a->token)
				 : el_lock(a->s, o->name, o->shared, o->wait_ms, &a->token);
	if (a->rc != EL_OK)
		snprintf(a->why, sizeof a->why, "%s", el_client_last_error(NULL));
	return NULL;
}

/* CLOSE_SESSION for a session on the cluster, by id, without touching the
 * el_session: rc EL_OK once the cluster answered (closed, or already gone). */
struct close_by_id {
	el_client *c;
	uint64_t session;
	int rc;
};

static void *close_by_id_main(void *arg)
{
	struct close_by_id *b = arg;
	struct el_cw_msg *m = calloc(2, sizeof(*m));
	b->rc = EL_EFULL;
	if (m == NULL)
		return NULL;
	m->type = EL_CW_CLOSE_SESSION;
	m->session = b->session;
	b->rc = el_client_request(b->c, m, m + 1);
	free(m);
	return NULL;
}

/* After a signal, no cluster took the close within --timeout (its retries
 * included), or a further signal came first: leave without waiting for the
 * acquire, which may block until the session's lease ends. CMD never ran;
 * the session, no longer renewed, expires on the cluster at its TTL, and
 * with it a wait still queued or a late grant. */
static _Noreturn void abandon(const struct run_opts *o, int sig)
{
	fprintf(stderr, "edgelock: %s: gave up waiting for %s (no node took the close; the "
		"session expires at its TTL)\n", strsignal(sig), o->name);
	_exit(128 + sig); /* not exit(): the acquire's thread is in the library */
}

/* Run the acquire of a (a job) until it ends; a signal meanwhile closes
 * the session on the cluster (another job), which ends it. Its result. */
static int acquire_until_signal(struct el_cli *cli, struct acquire *a)
{
	struct job j = { .fn = acquire_main, .arg = a };
	if (!job_start(&j)) {
		a->rc = EL_EFULL;
		return a->rc;
	}
	if (job_until_signal(&j, 0))
		return a->rc;
	/* one close, retried within --timeout by the library; the acquire may
	 * still end meanwhile (a grant, which the close then releases, or its
	 * own timeout) */
	const int sig = got_signal;
	struct close_by_id b = { .c = cli->client, .session = el_session_id(a->s) };
	struct job k = { .fn = close_by_id_main, .arg = &b };
	if (!job_start(&k) || !job_until_signal(&k, atomic_load(&n_signals)) ||
	    (b.rc != EL_OK && !atomic_load(&j.done)))
		abandon(a->o, sig);
	if (!job_until_signal(&j, atomic_load(&n_signals))) /* closed: it ends soon */
		abandon(a->o, sig);
	return a->rc;
}

/* Who holds the lock, asked once an acquire was refused or timed out. */
struct holder_query {
	el_client *c;
	const char *name;
	struct el_lock_info info;
	int rc;
};

static void *holder_query_main(void *arg)
{
	struct holder_query *q = arg;
	q->rc = el_query(q->c, q->name, &q->info);
	return NULL;
}

/* Run q (a job) until it ends: true. A signal first: false, and q runs on
 * in the library, so the caller leaves by _exit. The query is bounded by
 * --timeout alone (up to 1193h), and a Ctrl-C must not wait for it: a
 * tester's CLI sat out its whole --timeout after a refusal, the cluster
 * gone meanwhile. */
static bool holder_query_until_signal(struct holder_query *q)
{
	if (got_signal != 0)
		return false;
	/* static, as q: cut short, the job's thread still marks it done after
	 * this returns, until the process _exits */
	static struct job j;
	j = (struct job){ .fn = holder_query_main, .arg = q };
	if (!job_start(&j)) { /* no thread to spare: ask here, as before */
		holder_query_main(q);
		return true;
	}
	return job_until_signal(&j, 0);
}

/*
 * A lock in its lock-delay (refused, or a --wait that ran out meanwhile):
 * say so, and what bounds it. How much of it is left is not said: only the
 * leader knows (its volatile timer, node_timer.c, counted again in full by
 * a new leader), and no reply carries it; protocol version 1 has no field
 * for it, and its decoders refuse a reply with a key they do not know
 * (docs/protocol.md, "Encoding rules"), so adding one would break every
 * older client's QUERY of a delayed lock. observe watches it end.
 */
static void say_delayed(const struct run_opts *o, const struct el_lock_info *info)
{
	char token[40] = "";
	if (info->permits == 0)
		snprintf(token, sizeof token, ", token %" PRIu64, info->token);
	fprintf(stderr, "edgelock: %s is in its lock-delay (its holder's session expired%s): free "
		"once the lock-delay that holder asked for has passed, at most %us after the expiry "
		"(or after a new leader's election); how much is left the cluster does not say: "
		"`edgelock observe %s` prints when it is free\n", o->name, token,
		(unsigned)(EL_LOCK_DELAY_MAX_MS / 1000u), o->name);
}

/* Why the lock was not acquired, on stderr; the exit code. *asked: false
 * when a signal cut the question of who holds it short. */
static int not_acquired(struct el_cli *cli, const struct run_opts *o, bool election, int rc,
			bool *asked)
{
	const char *why = cli->why != NULL ? cli->why : el_client_last_error(cli->client);
	/* EL_ETIMEDOUT is also the library's "no leader reachable": exit 69, not 75 */
	const bool waited = rc == EL_EBUSY ||
			    (rc == EL_ETIMEDOUT && strstr(why, "no leader reachable") == NULL);
	const bool refused = waited || rc == EL_EDELAYED;
	/* static: a query cut short by a signal still writes into it, on its
	 * thread, until the process _exits */
	static struct holder_query q;
	q = (struct holder_query){ .c = cli->client, .name = o->name, .rc = EL_EIO };
	*asked = !refused || holder_query_until_signal(&q);
	const bool busy = waited && *asked && q.rc == EL_OK && q.info.held;
	const bool delayed = refused && *asked && q.rc == EL_OK && !q.info.held && q.info.delayed;
	if (busy && q.info.permits > 0)
		fprintf(stderr, "edgelock: %u/%u permits of %s are held (newest token %" PRIu64 ")\n",
			q.info.n_holders, q.info.permits, o->name, q.info.token);
	else if (busy)
		fprintf(stderr, "edgelock: %s is held by %s (session %" PRIu64 ", token %" PRIu64 ")\n",
			o->name, q.info.holder[0] ? q.info.holder : "a client", q.info.holder_session,
			q.info.token);
	if (delayed)
		say_delayed(o, &q.info);
	else if (refused && !busy)
		fprintf(stderr, "edgelock: %s\n", why);
	/* any other error: el_cli_fail says it once, and picks the exit code */
	return refused ? EL_EXIT_NOT_ACQUIRED : el_cli_fail(cli, election ? "elect" : "lock", rc);
}

static int run(struct el_cli *cli, int argc, char **argv, bool election)
{
	struct run_opts o;
	int rc = parse(argc, argv, election, &o, election ? ELECT_USAGE : LOCK_USAGE);
	if (rc != 0)
		return rc;
	if ((rc = el_cli_connect(cli)) != 0)
		return rc;
	catch_signals(on_signal);
	el_session *s;
	if ((rc = open_until_signal(cli, &o, &s)) != EL_OK)
		return el_cli_fail(cli, "open session", rc);
	if (got_signal != 0) /* came as the open ended: ask for nothing */
		return closed_after_signal(s, &o);
	el_session_set_lock_delay(s, o.delay_ms);
	struct acquire a = { .s = s, .o = &o, .election = election };
	rc = acquire_until_signal(cli, &a);
	if (rc == EL_OK && o.cmd != NULL && !lease_settled(s, &o)) {
		fprintf(stderr, "edgelock: %s %s lost before the command could start (renewals "
			"failed and the lease ran out); the command was not run\n",
			election ? "leadership of" : "lock", o.name);
		el_session_close(s);
		return EL_EXIT_LOCK_LOST;
	}
	if (got_signal != 0) /* whatever rc is: CMD must not run */
		return closed_after_signal(s, &o);
	if (rc == EL_EEXPIRED && a.token != 0) {
		/* granted, but the lease had run out here when the grant came
		 * (this CLI stopped across it): lost before CMD, as 76 says,
		 * not 69 "no leader" (an outside tester) */
		fprintf(stderr, "edgelock: %s %s was granted (token %" PRIu64 ") but its lease had "
			"run out here (this CLI was stopped, or no leader answered for it); the "
			"command was not run\n", election ? "leadership of" : "lock", o.name, a.token);
		el_session_close(s);
		return EL_EXIT_LOCK_LOST;
	}
	if (rc != EL_OK) {
		cli->why = a.why; /* set on the acquire's thread */
		bool asked;
		const int code = not_acquired(cli, &o, election, rc, &asked);
		if (!asked) { /* the holder query runs on: _exit, not exit() */
			const int status = closed_after_signal(s, &o);
			fflush(stderr);
			_exit(status);
		}
		el_session_close(s);
		return code;
	}
	if (election) { /* on stderr: stdout is CMD's (its data: `elect x v -- ./produce >
			 * data.csv`); the name escaped, as locks and observe show it */
		char name[4 * EL_NAME_MAX + 1];
		fprintf(stderr, "edgelock: elected %s: token %" PRIu64 "\n",
			el_cli_text(o.name, strlen(o.name), name, sizeof name), a.token);
	}
	fflush(stdout);
	struct watchdog dog = { .fd = -1 };
	if (o.cmd != NULL && start(o.cmd, o.name, a.token, el_session_id(s), &dog) < 0) {
		el_session_close(s);
		return el_cli_fail(cli, "fork", EL_EIO);
	}
	return finish(cli, s, &o, election, a.token, &dog);
}

int el_cli_lock(struct el_cli *cli, int argc, char **argv)
{
	return run(cli, argc, argv, false);
}

int el_cli_elect(struct el_cli *cli, int argc, char **argv)
{
	return run(cli, argc, argv, true);
}
