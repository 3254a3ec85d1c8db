#include "cudaep.h"
int main(void) { return cep_ping(0); }
