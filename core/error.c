/*
 * error.c - el_strerror(): the phrase for each EL_E* code.
 */
#include "el_error.h"

const char *el_strerror(int code)
{
	switch (code) {
	case EL_OK: return "ok";
	case EL_EINVAL: return "invalid argument";
	case EL_EFULL: return "table or queue full";
	case EL_ENOTLEADER: return "not the leader";
	case EL_ENOTFOUND: return "not found";
	case EL_EBUSY: return "busy";
	case EL_ESTALE: return "stale token or term";
	case EL_EEXPIRED: return "session expired";
	case EL_ETIMEDOUT: return "timed out";
	case EL_EDECODE: return "malformed input";
	case EL_EVERSION: return "unsupported version";
	case EL_ECOMPACTED: return "compacted into a snapshot";
	case EL_EIO: return "storage I/O error";
	case EL_ENOSPC: return "storage full";
	case EL_ECORRUPT: return "stored data corrupt";
	case EL_ELOCKED: return "data directory in use";
	case EL_EDELAYED: return "lock in lock-delay";
	case EL_ECANCELED: return "canceled";
	case EL_EPERM: return "permission denied";
	case EL_ESTOPPED: return "node stopped";
	case EL_ELIMIT: return "other semaphore limit";
	case EL_EKIND: return "lock vs semaphore";
	default: return "unknown error";
	}
}
