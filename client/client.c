#include "cudaep.h"
#include "cudaep.pb.h"
#include <pb_encode.h>
int cep_ping(cep_client *c) { (void)c; uint8_t b[16]; pb_ostream_t s = pb_ostream_from_buffer(b, sizeof b); cudaep_v1_Request r = cudaep_v1_Request_init_zero; return pb_encode(&s, cudaep_v1_Request_fields, &r) ? 0 : -1; }
