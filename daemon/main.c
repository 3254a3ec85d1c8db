#include "cudaep.h"
#include <stdio.h>
int main(void) { puts(cep_strerror(CEP_EINVAL)); return 0; }
