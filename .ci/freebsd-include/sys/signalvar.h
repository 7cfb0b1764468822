/* Stand-in for FreeBSD's <sys/signalvar.h>, for .ci/cross's freebsd check
 * only (with -D_SIG_WORDS=4 and -DSIGFILLSET there): runtime/cgo's FreeBSD
 * C includes it, and the host's glibc has no such header. That C is built
 * for cgo's type information only: never linked, never run. */
