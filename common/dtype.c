/*
 * dtype.c — element types of tensors (ONNX's numbering): sizes and names.
 * Shared by the client library and the daemon.
 */
#include "client/cudaep.h"

size_t cep_dtype_size(cep_dtype dtype)
{
	switch (dtype) {
	case CEP_DTYPE_BOOL:
	case CEP_DTYPE_UINT8:
	case CEP_DTYPE_INT8:
	case CEP_DTYPE_FLOAT8E4M3FN:
	case CEP_DTYPE_FLOAT8E4M3FNUZ:
	case CEP_DTYPE_FLOAT8E5M2:
	case CEP_DTYPE_FLOAT8E5M2FNUZ:
	case CEP_DTYPE_UINT4:
	case CEP_DTYPE_INT4:
	case CEP_DTYPE_FLOAT4E2M1:
		return 1;  /* the 4-bit types too: a byte each (client/cudaep.h) */
	case CEP_DTYPE_UINT16:
	case CEP_DTYPE_INT16:
	case CEP_DTYPE_FLOAT16:
	case CEP_DTYPE_BFLOAT16:
		return 2;
	case CEP_DTYPE_FLOAT32:
	case CEP_DTYPE_INT32:
	case CEP_DTYPE_UINT32:
		return 4;
	case CEP_DTYPE_INT64:
	case CEP_DTYPE_UINT64:
	case CEP_DTYPE_FLOAT64:
		return 8;
	case CEP_DTYPE_UNDEFINED:
		break;
	}
	return 0;
}

const char *cep_dtype_name(cep_dtype dtype)
{
	switch (dtype) {
	case CEP_DTYPE_FLOAT32: return "float32";
	case CEP_DTYPE_UINT8: return "uint8";
	case CEP_DTYPE_INT8: return "int8";
	case CEP_DTYPE_UINT16: return "uint16";
	case CEP_DTYPE_INT16: return "int16";
	case CEP_DTYPE_INT32: return "int32";
	case CEP_DTYPE_INT64: return "int64";
	case CEP_DTYPE_BOOL: return "bool";
	case CEP_DTYPE_FLOAT16: return "float16";
	case CEP_DTYPE_FLOAT64: return "float64";
	case CEP_DTYPE_UINT32: return "uint32";
	case CEP_DTYPE_UINT64: return "uint64";
	case CEP_DTYPE_BFLOAT16: return "bfloat16";
	case CEP_DTYPE_FLOAT8E4M3FN: return "float8e4m3fn";
	case CEP_DTYPE_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
	case CEP_DTYPE_FLOAT8E5M2: return "float8e5m2";
	case CEP_DTYPE_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
	case CEP_DTYPE_UINT4: return "uint4";
	case CEP_DTYPE_INT4: return "int4";
	case CEP_DTYPE_FLOAT4E2M1: return "float4e2m1";
	case CEP_DTYPE_UNDEFINED: break;
	}
	return "undefined";
}
