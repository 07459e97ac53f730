// OpenSSL's libcrypto (OpenSSL 3), for the EVP cipher interface only: AES-128-CCM for encrypted
// BTHome advertisements. Found through pkg-config (libcrypto.pc, package libssl-dev).
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/crypto.h>
