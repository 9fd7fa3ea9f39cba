// fork() support: the emulator pins no pages, so fork needs nothing; every
// call succeeds and ibv_is_fork_initialized() answers IBV_FORK_UNNEEDED.
#include "device/abi/declarations.hpp"

extern "C" {

int ibv_fork_init(void) {
    return 0;
}
enum ibv_fork_status ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}
int ibv_dontfork_range(void*, size_t) {
    return 0;
}
int ibv_dofork_range(void*, size_t) {
    return 0;
}

} // extern "C"
