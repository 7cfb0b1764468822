// bcryptprimitives.dll for Wine 8. Go 1.22 and later on Windows take their
// random bytes from ProcessPrng in bcryptprimitives.dll, which Debian's
// Wine 8 does not provide; this one-function DLL provides it on top of
// RtlGenRandom (advapi32's SystemFunction036). .ci/wine/run builds it with
// MinGW into the Wine prefix's system32:
//   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll prng_shim.c -ladvapi32
// ProcessPrng: https://learn.microsoft.com/windows/win32/seccng/processprng
// RtlGenRandom: https://learn.microsoft.com/windows/win32/api/ntsecapi/nf-ntsecapi-rtlgenrandom
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
