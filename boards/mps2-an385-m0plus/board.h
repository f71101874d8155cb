/* board.h - the AN385 model's facts (boards/mps2-an385), under this name. */
#ifndef EL_BOARD_NAME
#define EL_BOARD_NAME "mps2-an385-m0plus"
#endif
#include "../mps2-an385/board.h"
