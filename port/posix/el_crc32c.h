/*
 * el_crc32c.h - CRC-32C (Castagnoli), the checksum of every WAL record and
 * snapshot file. Chainable: crc = el_crc32c(crc, more, n), starting from 0.
 */
#ifndef EL_CRC32C_H
#define EL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t el_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* EL_CRC32C_H */
