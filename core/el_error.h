/*
 * el_error.h - the error codes of every edgelock API.
 *
 * Functions return 0 (EL_OK) or a negative EL_E* code; el_strerror() turns a
 * code into a short English phrase for logs and CLI output. Codes are stable:
 * they travel in client replies, so never renumber one, only add.
 */
#ifndef EL_ERROR_H
#define EL_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum el_error {
	EL_OK = 0,
	EL_EINVAL = -1,      /* an argument or field is out of its range */
	EL_EFULL = -2,       /* a bounded table or queue is full: retry later */
	EL_ENOTLEADER = -3,  /* this node is not the leader; see the leader hint */
	EL_ENOTFOUND = -4,   /* no such session, lock, member or entry */
	EL_EBUSY = -5,       /* the lock is held (try-acquire) or a change is pending */
	EL_ESTALE = -6,      /* a fencing token or term is older than the current one */
	EL_EEXPIRED = -7,    /* the session expired */
	EL_ETIMEDOUT = -8,   /* a bounded wait ran out */
	EL_EDECODE = -9,     /* malformed, oversized or unknown input bytes */
	EL_EVERSION = -10,   /* a message of an unsupported version */
	EL_ECOMPACTED = -11, /* the entry was compacted into a snapshot */
	EL_EIO = -12,        /* storage failed: the node stops acknowledging */
	EL_ENOSPC = -13,     /* storage is full: the node stops acknowledging */
	EL_ECORRUPT = -14,   /* a stored file failed its checksum */
	EL_ELOCKED = -15,    /* the data directory belongs to another process */
	EL_EDELAYED = -16,   /* the lock is in its lock-delay after an expiry */
	EL_ECANCELED = -17,  /* the request was dropped (session closed, resigned) */
	EL_EPERM = -18,      /* the client's identity may not touch this name */
	EL_ESTOPPED = -19,   /* the node was removed or stopped */
	EL_ELIMIT = -20,     /* the semaphore exists with another limit (reply: its limit) */
	EL_EKIND = -21,      /* a lock acquired as a semaphore, or a semaphore as a lock */
};

#define EL_ERROR_MIN EL_EKIND

/* A short phrase for a code; never NULL, also for unknown codes. */
const char *el_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* EL_ERROR_H */
