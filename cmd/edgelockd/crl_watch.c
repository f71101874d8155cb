/*
 * crl_watch.c - telling the operator before the CRL lapses (el_d_crl_turn).
 *
 * Past its nextUpdate a CRL refuses every certificate (mbedtls' BADCRL
 * flags; fail closed, docs/security.md): connections already up stay, but
 * every new client and peer proof is refused, so the first network blip
 * after it can lose the quorum. It used to lapse without a word (an outside
 * tester); the gauge edgelock_crl_next_update_seconds (metrics.c) shows it
 * to a dashboard, and these lines to whoever reads the log.
 */
#include <stdio.h>
#include <time.h>

#include "el_daemon.h"
#include "el_platform.h"

#define CRL_CHECK_MS 60000u        /* the wall clock read at most this often */
#define CRL_WARN_S (24 * 3600)     /* warn when less than this is left */
enum { CRL_SAID_NOTHING = 0, CRL_SAID_WARNING = 1, CRL_SAID_ERROR = 2 };

void el_d_crl_turn(struct el_daemon *d)
{
	time_t next;
	if (d->crl_checked_ms != 0 && d->now_ms - d->crl_checked_ms < CRL_CHECK_MS)
		return;
	d->crl_checked_ms = d->now_ms;
	if (d->ident == NULL || d->crl_said == CRL_SAID_ERROR ||
	    !el_ident_crl_next_update(d->ident, &next))
		return;
	const time_t now = time(NULL);
	char when[40];
	struct tm tm;
	if (gmtime_r(&next, &tm) == NULL ||
	    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(when, sizeof when, "?");
	if (now >= next) {
		d->crl_said = CRL_SAID_ERROR;
		el_log(EL_LOG_ERROR, "crl_file %s expired on %s (its nextUpdate): every new client "
		       "and peer connection is refused until a fresh one is loaded (openssl ca "
		       "-gencrl, then SIGHUP)", d->cfg.crl_file, when);
	} else if (next - now < CRL_WARN_S && d->crl_said == CRL_SAID_NOTHING) {
		d->crl_said = CRL_SAID_WARNING;
		el_log(EL_LOG_WARN, "crl_file %s expires on %s (its nextUpdate, in %lld min): then "
		       "every new client and peer connection is refused; renew it (openssl ca "
		       "-gencrl) and send SIGHUP", d->cfg.crl_file, when,
		       (long long)(next - now) / 60);
	}
}
