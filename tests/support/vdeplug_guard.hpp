// libvdeplug loads its transport plugins (libvdeplug_ptp.so, ...) with
// dlopen(RTLD_DEEPBIND), which the AddressSanitizer and ThreadSanitizer
// runtimes refuse: the process aborts. Tests that open a wire return early
// there, with a warning in the test log; the plain build runs them.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RDMASIM_VDEPLUG_LOADABLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RDMASIM_VDEPLUG_LOADABLE 0
#endif
#endif
#ifndef RDMASIM_VDEPLUG_LOADABLE
#define RDMASIM_VDEPLUG_LOADABLE 1
#endif

#define RDMASIM_SKIP_WITHOUT_VDEPLUG()                                                             \
    do {                                                                                           \
        if (!RDMASIM_VDEPLUG_LOADABLE) {                                                           \
            WARN("skipped: libvdeplug's plugins cannot be loaded under a sanitizer "               \
                 "(dlopen with RTLD_DEEPBIND)");                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)
