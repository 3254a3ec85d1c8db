/*
 * model_data.c — the data of ONNX tensors (initializers and tensor
 * attributes) for the model loader (engine/model.h): raw_data, the typed
 * repeated fields, and external files opened strictly below the directory
 * the client passed (openat2 with RESOLVE_BENEATH, else a walk that follows
 * no symlink). The 4-bit types, packed two to a byte in the file, are
 * unpacked to a byte each (client/cudaep.h). A tensor's buffer is
 * allocated only once the bytes that fill it are known to be there, so a
 * shape claimed in a file never decides an allocation on its own.
 */
#include "engine/model.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "onnx.pb-c.h"

const char *model__type_name(int t)
{
	switch (t) {
	case 8: return "string";
	case 14: return "complex64";
	case 15: return "complex128";
	case 24: return "float8e8m0";
	case 25: return "uint2";
	case 26: return "int2";
	case 27: return "float6e2m3";
	case 28: return "float6e3m2";
	default: break;
	}
	return t >= 0 && t < 32 && cep_dtype_size((cep_dtype)t) ? cep_dtype_name((cep_dtype)t)
							      : "unknown";
}

bool model__dtype_stored(int t)
{
	return t > 0 && t < 32 && op_dtype_in((cep_dtype)t, OP_DTS_STORED);
}

/* Parses a non-negative decimal (external_data offsets and lengths). */
static bool parse_size(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return true;
}

/* Refuses locations that could leave the model's directory by their text
 * alone: absolute paths and any ".." component. */
static int location_check(const char *what, const char *loc)
{
	const char *p = loc;

	if (!loc || !*loc)
		return cep__set_error(CEP_EMODEL, "%s: external data without a location", what);
	if (loc[0] == '/')
		return cep__set_error(CEP_EACCES, "%s: external data location '%s' is an absolute path",
				      what, loc);
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return cep__set_error(CEP_EACCES,
					      "%s: external data location '%s' leaves the model's directory",
					      what, loc);
		p += n;
		p += *p == '/';
	}
	return 0;
}

/* Opens loc below dir_fd one component at a time, following no symlink
 * at all: for kernels without openat2(). */
static int open_beneath_walk(int dir_fd, const char *loc)
{
	char comp[256];
	const char *p = loc;
	int cur = dir_fd, fd;

	for (;;) {
		size_t n = strcspn(p, "/");
		bool last = p[n] == '\0';

		if (n >= sizeof(comp)) {
			errno = ENAMETOOLONG;
			fd = -1;
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n + !last;
		if ((n == 0 || strcmp(comp, ".") == 0) && !last)
			continue;
		if (last) {
			fd = openat(cur, n ? comp : ".", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			break;
		}
		fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cur != dir_fd)
			close(cur);
		if (fd < 0)
			return -1;
		cur = fd;
	}
	if (cur != dir_fd) {
		int e = errno;

		close(cur);
		errno = e;
	}
	return fd;
}

int model__open_beneath(int dir_fd, const char *loc, bool walk_only)
{
	if (walk_only)
		return open_beneath_walk(dir_fd, loc);
#ifdef SYS_openat2
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dir_fd, loc, &how, sizeof(how));

	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return (int)fd;
#endif
	return open_beneath_walk(dir_fd, loc);
}

_Thread_local bool model__wanted_dir;

bool model_wanted_dir(void)
{
	return model__wanted_dir;
}

/* Reads bytes bytes of external data for the tensor `what` into *out. */
static int external_load(const Onnx__TensorProto *tp, int dir_fd, const char *what,
			 size_t bytes, void **out)
{
	const char *loc = NULL, *off_s = NULL, *len_s = NULL;
	uint64_t off = 0, len = bytes;
	unsigned char *buf = NULL;
	struct stat st;
	size_t i, done = 0;
	int fd = -1, ret;

	for (i = 0; i < tp->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = tp->external_data[i];

		if (!e->key)
			continue;
		if (strcmp(e->key, "location") == 0)
			loc = e->value;
		else if (strcmp(e->key, "offset") == 0)
			off_s = e->value;
		else if (strcmp(e->key, "length") == 0)
			len_s = e->value;
	}
	ret = location_check(what, loc);
	if (ret < 0)
		return ret;
	if ((off_s && !parse_size(off_s, &off)) || (len_s && !parse_size(len_s, &len)))
		return cep__set_error(CEP_EMODEL, "%s: external data offset or length is not a number",
				      what);
	if (len != bytes)
		return cep__set_error(CEP_EMODEL, "%s: external data length is %" PRIu64
				      ", the shape needs %zu bytes", what, len, bytes);
	if (dir_fd < 0) {
		model__wanted_dir = true;
		return cep__set_error(CEP_EMODEL,
				      "%s: the model has external data ('%s') but no directory was given",
				      what, loc);
	}
	fd = model__open_beneath(dir_fd, loc, false);
	if (fd < 0) {
		if (errno == EXDEV || errno == ELOOP)
			ret = cep__set_error(CEP_EACCES,
					     "%s: external data '%s' leaves the model's directory",
					     what, loc);
		else
			ret = cep__set_error(cep__from_errno(errno), "%s: external data '%s': %s",
					     what, loc, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = cep__set_error(CEP_EMODEL, "%s: external data '%s' is not a regular file",
				     what, loc);
		goto out;
	}
	if (off > (uint64_t)st.st_size || bytes > (uint64_t)st.st_size - off) {
		ret = cep__set_error(CEP_EMODEL, "%s: external data needs bytes %" PRIu64 "..%" PRIu64
				     " of '%s', which has %" PRIu64, what, off, off + bytes, loc,
				     (uint64_t)st.st_size);
		goto out;
	}
	buf = malloc(bytes ? bytes : 1);
	if (!buf) {
		ret = cep__set_error(CEP_ENOMEM, "%s: out of memory for %zu bytes", what, bytes);
		goto out;
	}
	while (done < bytes) {
		ssize_t n = pread(fd, buf + done, bytes - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = cep__set_error(n < 0 ? cep__from_errno(errno) : CEP_EIO,
					     "%s: reading external data '%s' failed", what, loc);
			goto out;
		}
		done += (size_t)n;
	}
	*out = buf;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Copies a typed repeated field into the tensor's own buffer. */
static int typed_load(const Onnx__TensorProto *tp, const char *what, cep_dtype t,
		      int64_t numel, void **out)
{
	size_t have, i;
	unsigned char *buf;

	/* ONNX's fields: double_data for float64, uint64_data for uint32 and
	 * uint64, int32_data for every type narrower than 32 bits. */
	switch (t) {
	case CEP_DTYPE_FLOAT32: have = tp->n_float_data; break;
	case CEP_DTYPE_INT64: have = tp->n_int64_data; break;
	case CEP_DTYPE_FLOAT64: have = tp->n_double_data; break;
	case CEP_DTYPE_UINT32:
	case CEP_DTYPE_UINT64: have = tp->n_uint64_data; break;
	default: have = tp->n_int32_data; break;
	}
	if (have != (size_t)numel)
		return cep__set_error(CEP_EMODEL, "%s has %zu values, its shape needs %" PRId64,
				      what, have, numel);
	buf = malloc(numel ? (size_t)numel * cep_dtype_size(t) : 1);
	if (!buf)
		return cep__set_error(CEP_ENOMEM, "%s: out of memory", what);
	for (i = 0; i < have; i++) {
		switch (t) {
		case CEP_DTYPE_FLOAT32:
			memcpy(buf + i * 4, &tp->float_data[i], 4);
			break;
		case CEP_DTYPE_INT64:
			memcpy(buf + i * 8, &tp->int64_data[i], 8);
			break;
		case CEP_DTYPE_INT32:
			memcpy(buf + i * 4, &tp->int32_data[i], 4);
			break;
		case CEP_DTYPE_FLOAT64:
			memcpy(buf + i * 8, &tp->double_data[i], 8);
			break;
		case CEP_DTYPE_UINT64:
			memcpy(buf + i * 8, &tp->uint64_data[i], 8);
			break;
		case CEP_DTYPE_UINT32: {
			uint32_t u = (uint32_t)tp->uint64_data[i];

			memcpy(buf + i * 4, &u, 4);
			break;
		}
		case CEP_DTYPE_FLOAT16:
		case CEP_DTYPE_BFLOAT16:
		case CEP_DTYPE_INT16:
		case CEP_DTYPE_UINT16: {
			/* The 16 bits travel in the low half of an int32
			 * (int16 as its value, whose low half is the same). */
			uint16_t h = (uint16_t)tp->int32_data[i];

			memcpy(buf + i * 2, &h, 2);
			break;
		}
		case CEP_DTYPE_BOOL:
			buf[i] = tp->int32_data[i] != 0;
			break;
		default:
			buf[i] = (unsigned char)tp->int32_data[i];
			break;
		}
	}
	*out = buf;
	return 0;
}

/* ----------------------------------------------------------- 4-bit data */

/* The 4-bit types are packed two to a byte in a model file, element 2k in
 * the low nibble of byte k (an odd count leaves the last high nibble
 * unused), and held a byte each in memory (client/cudaep.h). */
static bool dtype_4bit(cep_dtype t)
{
	return t == CEP_DTYPE_UINT4 || t == CEP_DTYPE_INT4 || t == CEP_DTYPE_FLOAT4E2M1;
}

/* Nibble v (the low 4 bits) as the byte cudaep holds it: an int4
 * sign-extended, a uint4 or float4e2m1 as it is. */
static unsigned char nibble_byte(cep_dtype t, unsigned v)
{
	v &= 0xfu;
	return (unsigned char)(t == CEP_DTYPE_INT4 && v >= 8 ? v | 0xf0u : v);
}

/* Unpacks n elements of 4-bit type t from packed ((n + 1) / 2 bytes) into
 * a new buffer of n bytes, *out. */
static int unpack_4bit(const unsigned char *packed, cep_dtype t, int64_t n, const char *what,
		       void **out)
{
	unsigned char *buf = malloc(n ? (size_t)n : 1);
	int64_t i;

	if (!buf)
		return cep__set_error(CEP_ENOMEM, "%s: out of memory", what);
	for (i = 0; i < n; i++)
		buf[i] = nibble_byte(t, packed[i / 2] >> (i % 2 ? 4 : 0));
	*out = buf;
	return 0;
}

/*
 * int32_data of a 4-bit tensor: ONNX's form has two elements in the low
 * byte of each value, packed as raw_data is ((n + 1) / 2 values); one
 * element in each value (n values), which some writers produce, is taken
 * too. The counts differ for every n but 1, where both read alike.
 */
static int typed_load_4bit(const Onnx__TensorProto *tp, const char *what, cep_dtype t,
			   int64_t numel, void **out)
{
	size_t have = tp->n_int32_data, packed = (size_t)(numel + 1) / 2, i;
	unsigned char *buf;
	int ret;

	if (have != packed && have != (size_t)numel)
		return cep__set_error(CEP_EMODEL, "%s has %zu int32_data values, its shape needs %zu "
				      "(two %s elements to a value)", what, have, packed,
				      cep_dtype_name(t));
	buf = malloc(have ? have : 1);
	if (!buf)
		return cep__set_error(CEP_ENOMEM, "%s: out of memory", what);
	for (i = 0; i < have; i++)
		buf[i] = (unsigned char)tp->int32_data[i];
	if (have == packed) {
		ret = unpack_4bit(buf, t, numel, what, out);
		free(buf);
		return ret;
	}
	for (i = 0; i < have; i++)
		buf[i] = nibble_byte(t, buf[i]);
	*out = buf;
	return 0;
}

/* The data of a 4-bit tensor of numel elements into t->data, unpacked. */
static int tensor_load_4bit(const Onnx__TensorProto *tp, int dir_fd, const char *what,
			    int64_t numel, struct op_tensor *t)
{
	size_t packed = (size_t)(numel + 1) / 2;
	void *file = NULL;
	int ret;

	if (tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		ret = external_load(tp, dir_fd, what, packed, &file);
		if (ret == 0)
			ret = unpack_4bit(file, t->dtype, numel, what, &t->data);
		free(file);
		return ret;
	}
	if (tp->has_raw_data) {
		if (tp->raw_data.len != packed)
			return cep__set_error(CEP_EMODEL, "%s: raw_data has %zu bytes, its shape needs "
					      "%zu (%" PRId64 " %s elements, two to a byte)", what,
					      tp->raw_data.len, packed, numel,
					      cep_dtype_name(t->dtype));
		return unpack_4bit(tp->raw_data.data, t->dtype, numel, what, &t->data);
	}
	return typed_load_4bit(tp, what, t->dtype, numel, &t->data);
}

int model__tensor_load(const Onnx__TensorProto *tp, int dir_fd, const char *what,
		       struct op_tensor *t, size_t *bytes)
{
	int64_t numel = 1;
	size_t i, size;

	memset(t, 0, sizeof(*t));
	if (!model__dtype_stored(tp->data_type))
		return cep__set_error(CEP_EUNSUPPORTED, "%s has type %s, which cudaep does not support",
				      what, model__type_name(tp->data_type));
	if (tp->n_dims > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "%s has rank %zu, above %d", what,
				      tp->n_dims, CEP_MAX_RANK);
	if (tp->segment)
		return cep__set_error(CEP_EUNSUPPORTED, "%s is segmented", what);
	for (i = 0; i < tp->n_dims; i++) {
		int64_t d = tp->dims[i];

		if (d < 0)
			return cep__set_error(CEP_EMODEL, "%s: dimension %zu is %" PRId64, what, i, d);
		t->dims[i] = d;
	}
	t->dtype = (cep_dtype)tp->data_type;
	t->rank = (int)tp->n_dims;
	for (i = 0; i < tp->n_dims; i++) {
		if (t->dims[i] == 0) {
			numel = 0;
			break;
		}
	}
	for (i = 0; i < tp->n_dims && numel; i++) {
		if (t->dims[i] > OP_MAX_NUMEL / numel)
			return cep__set_error(CEP_EMODEL, "%s: its dimensions multiply to more than 2^40",
					      what);
		numel *= t->dims[i];
	}
	size = (size_t)numel * cep_dtype_size(t->dtype);
	*bytes = size;
	if (dtype_4bit(t->dtype))
		return tensor_load_4bit(tp, dir_fd, what, numel, t);
	if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return external_load(tp, dir_fd, what, size, &t->data);
	if (tp->has_raw_data) {
		if (tp->raw_data.len != size)
			return cep__set_error(CEP_EMODEL, "%s: raw_data has %zu bytes, its shape needs %zu",
					      what, tp->raw_data.len, size);
		t->data = malloc(size ? size : 1);
		if (!t->data)
			return cep__set_error(CEP_ENOMEM, "%s: out of memory", what);
		if (size)
			memcpy(t->data, tp->raw_data.data, size);
		return 0;
	}
	return typed_load(tp, what, t->dtype, numel, &t->data);
}
