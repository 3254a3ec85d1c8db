/*
 * cudaep-run-npy.c — the host side of cudaep-run's tensors: arrays in this
 * process's memory, .npy files in and out (numpy's format: a magic string,
 * a version, a Python-dict header, then the raw elements), random inputs
 * and the checksums printed for outputs. Nothing here talks to the daemon.
 *
 * A .npy header is untrusted input, so it is parsed by a small grammar of
 * its own (the dict literal numpy writes) rather than by pattern matching,
 * and every size read from a file is checked before it is used.
 */
#include "tools/cudaep-run/cudaep-run.h"
#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cudaep-run reads .npy data as little-endian in place"
#endif

#define NPY_MAGIC     "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN     64         /* numpy pads headers to this */
#define NPY_MAX_HDR   (1 << 20)  /* bytes; numpy's own headers are tiny */

/* numpy's type strings without the byte-order character. */
static const struct {
	const char *code;
	cep_dtype dtype;
} npy_types[] = {
	{"b1", CEP_DTYPE_BOOL},    {"i1", CEP_DTYPE_INT8},
	{"u1", CEP_DTYPE_UINT8},   {"i2", CEP_DTYPE_INT16},
	{"u2", CEP_DTYPE_UINT16},  {"i4", CEP_DTYPE_INT32},
	{"u4", CEP_DTYPE_UINT32},  {"i8", CEP_DTYPE_INT64},
	{"u8", CEP_DTYPE_UINT64},  {"f2", CEP_DTYPE_FLOAT16},
	{"f4", CEP_DTYPE_FLOAT32}, {"f8", CEP_DTYPE_FLOAT64},
};

#define N_NPY_TYPES (sizeof(npy_types) / sizeof(npy_types[0]))

/* -------------------------------------------------------------- arrays */

size_t run_shape_numel(const int64_t *shape, int rank)
{
	size_t n = 1;

	for (int i = 0; i < rank; i++)
		n *= (size_t)shape[i];
	return n;
}

/* Bytes of an array of dtype and shape (rank dims) into *out. */
static int array_bytes(cep_dtype dtype, int rank, const int64_t *shape,
		       size_t *out)
{
	size_t bytes = cep_dtype_size(dtype);

	if (bytes == 0)
		return cep__set_error(CEP_EDTYPE, "no element size for dtype %d",
				      (int)dtype);
	if (rank < 0 || rank > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "rank %d (at most %d)", rank,
				      CEP_MAX_RANK);
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return cep__set_error(CEP_ESHAPE, "dimension %d is %" PRId64,
					      i, shape[i]);
		if (shape[i] != 0 && bytes > SIZE_MAX / (uint64_t)shape[i])
			return cep__set_error(CEP_ESHAPE, "the shape overflows");
		bytes *= (size_t)shape[i];
	}
	*out = bytes;
	return 0;
}

int run_array_init(struct run_array *a, cep_dtype dtype, int rank,
		   const int64_t *shape)
{
	size_t bytes;
	int ret;

	memset(a, 0, sizeof(*a));
	ret = array_bytes(dtype, rank, shape, &bytes);
	if (ret != 0)
		return ret;
	if (bytes > 0) {
		a->data = calloc(1, bytes);
		if (a->data == NULL)
			return cep__set_error(CEP_ENOMEM, "cannot allocate %zu "
					      "bytes", bytes);
	}
	a->dtype = dtype;
	a->rank = rank;
	memcpy(a->shape, shape, sizeof(shape[0]) * (size_t)rank);
	a->bytes = bytes;
	return 0;
}

void run_array_close(struct run_array *a)
{
	if (a == NULL)
		return;
	free(a->data);
	memset(a, 0, sizeof(*a));
}

/* --------------------------------------------------------- .npy header */

/* A cursor over the header text, with the file's name for messages. */
struct hdr {
	const char *p;
	const char *end;
	const char *path;
};

static int hdr_bad(const struct hdr *h, const char *what)
{
	return cep__set_error(CEP_EBADMSG, "%s: not a .npy file numpy wrote: "
			      "its header %s", h->path, what);
}

static void hdr_skip(struct hdr *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' ||
				 *h->p == '\n' || *h->p == '\r'))
		h->p++;
}

/* Consumes c (after white space) if it is next. */
static bool hdr_eat(struct hdr *h, char c)
{
	hdr_skip(h);
	if (h->p < h->end && *h->p == c) {
		h->p++;
		return true;
	}
	return false;
}

/* A quoted string without escapes (numpy writes none in these keys and
 * type codes) into buf; false if there is none or it does not fit. */
static bool hdr_string(struct hdr *h, char *buf, size_t len)
{
	char quote;
	size_t n = 0;

	hdr_skip(h);
	if (h->p == h->end || (*h->p != '\'' && *h->p != '"'))
		return false;
	quote = *h->p++;
	while (h->p < h->end && *h->p != quote) {
		if (*h->p == '\\' || n + 1 >= len)
			return false;
		buf[n++] = *h->p++;
	}
	if (h->p == h->end)
		return false;
	h->p++;
	buf[n] = '\0';
	return true;
}

/* The bare word True or False. */
static bool hdr_bool(struct hdr *h, bool *out)
{
	hdr_skip(h);
	if ((size_t)(h->end - h->p) >= 4 && memcmp(h->p, "True", 4) == 0) {
		h->p += 4;
		*out = true;
		return true;
	}
	if ((size_t)(h->end - h->p) >= 5 && memcmp(h->p, "False", 5) == 0) {
		h->p += 5;
		*out = false;
		return true;
	}
	return false;
}

/* A tuple of non-negative integers: "()", "(3,)", "(2, 3)". */
static int hdr_shape(struct hdr *h, struct run_array *a)
{
	if (!hdr_eat(h, '('))
		return hdr_bad(h, "has no shape tuple");
	a->rank = 0;
	for (;;) {
		int64_t d = 0;

		if (hdr_eat(h, ')'))
			return 0;
		if (h->p == h->end || *h->p < '0' || *h->p > '9')
			return hdr_bad(h, "has a malformed shape");
		while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
			if (d > (INT64_MAX - 9) / 10)
				return hdr_bad(h, "has a dimension too large");
			d = d * 10 + (*h->p++ - '0');
		}
		if (a->rank == CEP_MAX_RANK)
			return cep__set_error(CEP_ESHAPE, "%s: the array has more "
					      "than %d dimensions", h->path,
					      CEP_MAX_RANK);
		a->shape[a->rank++] = d;
		if (!hdr_eat(h, ',')) {
			if (!hdr_eat(h, ')'))
				return hdr_bad(h, "has a malformed shape");
			return 0;
		}
	}
}

/* '<f4', '|b1', ...: a simple little-endian type of numpy's. */
static int hdr_descr(struct hdr *h, const char *descr, cep_dtype *out)
{
	char order = descr[0];

	if (order == '>')
		return cep__set_error(CEP_ENOTSUP, "%s: the array is big-endian "
				      "('%s'); save it little-endian, e.g. "
				      "a.astype(a.dtype.newbyteorder('<'))",
				      h->path, descr);
	if (order == '<' || order == '|' || order == '=') {
		for (size_t i = 0; i < N_NPY_TYPES; i++)
			if (strcmp(descr + 1, npy_types[i].code) == 0) {
				*out = npy_types[i].dtype;
				return 0;
			}
	}
	return cep__set_error(CEP_ENOTSUP, "%s: numpy dtype '%s' is not one "
			      "cudaep-run reads (bool, int8/16/32/64, "
			      "uint8/16/32/64, float16/32/64)",
			      h->path, descr);
}

/* Parses the header dict into a's dtype and shape. */
static int hdr_parse(struct hdr *h, struct run_array *a)
{
	bool seen_descr = false, seen_order = false, seen_shape = false;
	char key[32], descr[32];
	bool fortran;
	int ret;

	if (!hdr_eat(h, '{'))
		return hdr_bad(h, "is not a dict");
	while (!hdr_eat(h, '}')) {
		if (!hdr_string(h, key, sizeof(key)) || !hdr_eat(h, ':'))
			return hdr_bad(h, "has a malformed key");
		if (strcmp(key, "descr") == 0 && !seen_descr) {
			hdr_skip(h);
			if (h->p < h->end && *h->p == '[')
				return cep__set_error(CEP_ENOTSUP, "%s: a "
						      "structured array; "
						      "cudaep-run reads plain "
						      "arrays", h->path);
			if (!hdr_string(h, descr, sizeof(descr)))
				return hdr_bad(h, "has a malformed descr");
			ret = hdr_descr(h, descr, &a->dtype);
			if (ret != 0)
				return ret;
			seen_descr = true;
		} else if (strcmp(key, "fortran_order") == 0 && !seen_order) {
			if (!hdr_bool(h, &fortran))
				return hdr_bad(h, "has a malformed fortran_order");
			if (fortran)
				return cep__set_error(CEP_ENOTSUP, "%s: the array "
						      "is in Fortran order; save "
						      "numpy.ascontiguousarray(a)",
						      h->path);
			seen_order = true;
		} else if (strcmp(key, "shape") == 0 && !seen_shape) {
			ret = hdr_shape(h, a);
			if (ret != 0)
				return ret;
			seen_shape = true;
		} else {
			return hdr_bad(h, "has an unexpected or repeated key");
		}
		if (!hdr_eat(h, ',')) {
			if (!hdr_eat(h, '}'))
				return hdr_bad(h, "is not a dict");
			break;
		}
	}
	if (!seen_descr || !seen_order || !seen_shape)
		return hdr_bad(h, "lacks descr, fortran_order or shape");
	return 0;
}

/* ----------------------------------------------------------- .npy I/O */

/* Puts "path: " before the last error's message. */
static int path_error(int err, const char *path)
{
	/* A copy: the message is formatted into the buffer it comes from. */
	char why[512];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "%s: %s", path, why);
}

static int sys_fail(const char *what, const char *path)
{
	int err = errno;

	return cep__set_error(cep__from_errno(err), "cannot %s %s: %s", what,
			      path, strerror(err));
}

/* Reads exactly len bytes; CEP_EBADMSG when the file ends first. */
static int read_full(int fd, void *buf, size_t len, const char *path)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sys_fail("read", path);
		if (n == 0)
			return cep__set_error(CEP_EBADMSG, "%s: the file ends "
					      "early; not a whole .npy file",
					      path);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int run_npy_read(struct run_array *a, const char *path)
{
	unsigned char pre[NPY_MAGIC_LEN + 2 + 4];
	size_t pre_len, hdr_len, data_len, esize, bytes;
	struct run_array tmp;
	struct stat st;
	char *text = NULL;
	struct hdr h;
	int fd = -1;
	int ret;

	memset(a, 0, sizeof(*a));
	memset(&tmp, 0, sizeof(tmp));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = sys_fail("open", path);
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		ret = sys_fail("stat", path);
		goto out;
	}
	ret = read_full(fd, pre, NPY_MAGIC_LEN + 2, path);
	if (ret != 0)
		goto out;
	if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
		ret = cep__set_error(CEP_EBADMSG, "%s: not a .npy file (no "
				     "numpy magic string)", path);
		goto out;
	}
	/* Version 1 has a 16-bit header length; 2 and 3 (UTF-8 headers,
	 * which change nothing for the keys read here) a 32-bit one. */
	if (pre[NPY_MAGIC_LEN] == 1) {
		pre_len = NPY_MAGIC_LEN + 2 + 2;
	} else if (pre[NPY_MAGIC_LEN] == 2 || pre[NPY_MAGIC_LEN] == 3) {
		pre_len = NPY_MAGIC_LEN + 2 + 4;
	} else {
		ret = cep__set_error(CEP_EBADMSG, "%s: .npy format version %u "
				     "is not one cudaep-run reads (1 to 3)",
				     path, pre[NPY_MAGIC_LEN]);
		goto out;
	}
	ret = read_full(fd, pre + NPY_MAGIC_LEN + 2, pre_len - NPY_MAGIC_LEN - 2,
			path);
	if (ret != 0)
		goto out;
	/* Little-endian, after the magic and the two version bytes. */
	hdr_len = 0;
	for (size_t i = pre_len; i > NPY_MAGIC_LEN + 2; i--)
		hdr_len = hdr_len << 8 | pre[i - 1];
	if (hdr_len > NPY_MAX_HDR) {
		ret = cep__set_error(CEP_EBADMSG, "%s: a .npy header of %zu "
				     "bytes; numpy writes far smaller ones",
				     path, hdr_len);
		goto out;
	}
	text = malloc(hdr_len + 1);
	if (text == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "%s: out of memory", path);
		goto out;
	}
	ret = read_full(fd, text, hdr_len, path);
	if (ret != 0)
		goto out;
	text[hdr_len] = '\0';
	h = (struct hdr){ text, text + hdr_len, path };
	ret = hdr_parse(&h, &tmp);
	if (ret != 0)
		goto out;

	/* The elements must fill the rest of the file exactly: a short file
	 * is truncated, a long one is not what its header says. Checked
	 * before allocating, so a lying header cannot ask for exabytes. */
	ret = array_bytes(tmp.dtype, tmp.rank, tmp.shape, &bytes);
	if (ret != 0) {
		ret = path_error(ret, path);
		goto out;
	}
	esize = cep_dtype_size(tmp.dtype);
	data_len = (uintmax_t)st.st_size >= pre_len + hdr_len
			   ? (size_t)st.st_size - pre_len - hdr_len
			   : 0;
	if (S_ISREG(st.st_mode) && data_len != bytes) {
		ret = cep__set_error(CEP_EBADMSG, "%s: %zu bytes of data, but "
				     "its header announces %zu (%zu elements "
				     "of %zu bytes); the file is cut short or "
				     "corrupt", path, data_len, bytes,
				     bytes / esize, esize);
		goto out;
	}
	ret = run_array_init(a, tmp.dtype, tmp.rank, tmp.shape);
	if (ret != 0) {
		ret = path_error(ret, path);
		goto out;
	}
	ret = read_full(fd, a->data, a->bytes, path);
out:
	if (ret != 0)
		run_array_close(a);
	free(text);
	if (fd >= 0)
		close(fd);
	return ret;
}

static int write_full(int fd, const void *buf, size_t len, const char *path)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sys_fail("write", path);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int run_npy_write(const char *path, cep_dtype dtype, int rank,
		  const int64_t *shape, const void *data, size_t bytes)
{
	/* Magic, version, length, then a dict of at most a few hundred
	 * bytes for CEP_MAX_RANK dimensions. */
	char head[NPY_ALIGN * 8];
	const char *code = NULL;
	size_t len, dict_at = NPY_MAGIC_LEN + 4;
	int fd = -1, ret, n;

	for (size_t i = 0; i < N_NPY_TYPES; i++)
		if (npy_types[i].dtype == dtype)
			code = npy_types[i].code;
	if (code == NULL)
		return cep__set_error(CEP_ENOTSUP, "%s: numpy has no dtype for "
				      "%s; cannot save it as .npy", path,
				      cep_dtype_name(dtype));
	n = snprintf(head + dict_at, sizeof(head) - dict_at,
		     "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
		     cep_dtype_size(dtype) == 1 ? '|' : '<', code);
	len = dict_at + (size_t)n;
	for (int i = 0; i < rank; i++) {
		n = snprintf(head + len, sizeof(head) - len, "%" PRId64 "%s",
			     shape[i], rank == 1 ? "," : i + 1 < rank ? ", " : "");
		len += (size_t)n;
	}
	len += (size_t)snprintf(head + len, sizeof(head) - len, "), }");
	/* Spaces and a newline pad the header so the data starts aligned, as
	 * numpy writes and expects. */
	while ((len + 1) % NPY_ALIGN != 0)
		head[len++] = ' ';
	head[len++] = '\n';
	memcpy(head, NPY_MAGIC, NPY_MAGIC_LEN);
	head[NPY_MAGIC_LEN] = 1;
	head[NPY_MAGIC_LEN + 1] = 0;
	head[NPY_MAGIC_LEN + 2] = (char)((len - dict_at) & 0xff);
	head[NPY_MAGIC_LEN + 3] = (char)((len - dict_at) >> 8);

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return sys_fail("create", path);
	ret = write_full(fd, head, len, path);
	if (ret == 0)
		ret = write_full(fd, data, bytes, path);
	if (close(fd) != 0 && ret == 0)
		ret = sys_fail("write", path);
	return ret;
}

/* ------------------------------------------------------------ elements */

/* IEEE half precision from float, rounding to nearest even. */
static uint16_t half_from_float(float f)
{
	uint32_t x, mag, sign;
	float a = fabsf(f);

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	mag = x & 0x7fffffff;
	if (mag > 0x7f800000)
		return (uint16_t)(sign | 0x7e00);
	if (mag >= 0x47800000) /* 65536 and up, infinity included */
		return (uint16_t)(sign | 0x7c00);
	/* Below half's smallest normal, 2^-14: a multiple of 2^-24. A value
	 * that rounds up to 1024 of them is that normal, same bits. */
	if (a < 0x1p-14f)
		return (uint16_t)(sign | (uint32_t)lrintf(a * 0x1p24f));
	mag -= (uint32_t)(127 - 15) << 23;
	return (uint16_t)(sign | ((mag + 0xfff + ((mag >> 13) & 1)) >> 13));
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
	float f;

	if (exp == 0) {
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		x = sign | 0x7f800000 | man << 13;
	else
		x = sign | (exp + 127 - 15) << 23 | man << 13;
	memcpy(&f, &x, sizeof(f));
	return f;
}

static uint16_t bf16_from_float(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static float bf16_to_float(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

/* The exponent and mantissa widths and bias of a float8 type; false for
 * another type. */
static bool f8_shape(cep_dtype t, int *ebits, int *mbits, int *bias)
{
	switch (t) {
	case CEP_DTYPE_FLOAT8E4M3FN: *ebits = 4; *mbits = 3; *bias = 7; return true;
	case CEP_DTYPE_FLOAT8E4M3FNUZ: *ebits = 4; *mbits = 3; *bias = 8; return true;
	case CEP_DTYPE_FLOAT8E5M2: *ebits = 5; *mbits = 2; *bias = 15; return true;
	case CEP_DTYPE_FLOAT8E5M2FNUZ: *ebits = 5; *mbits = 2; *bias = 16; return true;
	default: return false;
	}
}

/* A float8 code as a double: NaN and the infinities by each type's
 * rules (S.1111.111 of e4m3fn, 0x80 of the fnuz types, IEEE's for e5m2). */
static double f8_to_double(uint8_t c, cep_dtype t)
{
	int eb, mb, bias, e, m, emax;
	bool uz = t == CEP_DTYPE_FLOAT8E4M3FNUZ || t == CEP_DTYPE_FLOAT8E5M2FNUZ;
	double v;

	f8_shape(t, &eb, &mb, &bias);
	e = (c >> mb) & ((1 << eb) - 1);
	m = c & ((1 << mb) - 1);
	emax = (1 << eb) - 1;
	if (uz && c == 0x80)
		return NAN;
	if (t == CEP_DTYPE_FLOAT8E5M2 && e == emax)
		return m ? NAN : (c & 0x80 ? -INFINITY : INFINITY);
	if (t == CEP_DTYPE_FLOAT8E4M3FN && e == emax && m == (1 << mb) - 1)
		return NAN;
	v = e ? ldexp((double)(m | 1 << mb), e - bias - mb) : ldexp((double)m, 1 - bias - mb);
	return c & 0x80 ? -v : v;
}

/* The float8 code of k in [0, 7], which every float8 type holds exactly. */
static uint8_t f8_small(unsigned k, cep_dtype t)
{
	int eb, mb, bias, e = 0;

	f8_shape(t, &eb, &mb, &bias);
	if (k == 0)
		return 0;
	while ((2u << e) <= k)
		e++;
	return (uint8_t)((unsigned)(e + bias) << mb | (k - (1u << e)) << mb >> e);
}

/* splitmix64: small, fast, and every seed (0 included) gives a good
 * stream. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1) on a grid of 2^-23, so every value is exact in
 * float32 (and rounds cleanly to float16 and bfloat16). */
static float rng_float(uint64_t *s)
{
	return (float)(rng_next(s) >> 40) * 0x1p-23f - 1.0f;
}

int run_elem_fill(void *data, cep_dtype dtype, size_t n, uint64_t *rng)
{
	unsigned char *p = data;

	for (size_t i = 0; i < n; i++) {
		int64_t v = (int64_t)(rng_next(rng) % 10);
		uint16_t u16;
		float f;
		double d;

		switch (dtype) {
		case CEP_DTYPE_FLOAT32:
			f = rng_float(rng);
			memcpy(p + 4 * i, &f, 4);
			break;
		case CEP_DTYPE_FLOAT16:
			u16 = half_from_float(rng_float(rng));
			memcpy(p + 2 * i, &u16, 2);
			break;
		case CEP_DTYPE_BFLOAT16:
			u16 = bf16_from_float(rng_float(rng));
			memcpy(p + 2 * i, &u16, 2);
			break;
		case CEP_DTYPE_FLOAT64:
			d = rng_float(rng);
			memcpy(p + 8 * i, &d, 8);
			break;
		case CEP_DTYPE_BOOL:
			p[i] = (unsigned char)(v & 1);
			break;
		case CEP_DTYPE_FLOAT8E4M3FN:
		case CEP_DTYPE_FLOAT8E4M3FNUZ:
		case CEP_DTYPE_FLOAT8E5M2:
		case CEP_DTYPE_FLOAT8E5M2FNUZ:
			p[i] = f8_small((unsigned)(v & 7), dtype);
			break;
		case CEP_DTYPE_UINT4:
		case CEP_DTYPE_INT4:
		case CEP_DTYPE_FLOAT4E2M1:
			/* A byte each (client/cudaep.h): 0..7 in the low
			 * nibble, a value of every 4-bit type (float4e2m1
			 * codes 0..7: 0 to 6). */
			p[i] = (unsigned char)(v & 7);
			break;
		case CEP_DTYPE_UINT8:
		case CEP_DTYPE_INT8:
			p[i] = (unsigned char)v;
			break;
		case CEP_DTYPE_UINT16:
		case CEP_DTYPE_INT16:
			u16 = (uint16_t)v;
			memcpy(p + 2 * i, &u16, 2);
			break;
		case CEP_DTYPE_UINT32:
		case CEP_DTYPE_INT32: {
			int32_t v32 = (int32_t)v;

			memcpy(p + 4 * i, &v32, 4);
			break;
		}
		case CEP_DTYPE_UINT64:
		case CEP_DTYPE_INT64:
			memcpy(p + 8 * i, &v, 8);
			break;
		default:
			return cep__set_error(CEP_EDTYPE, "cannot make random "
					      "values of dtype %s",
					      cep_dtype_name(dtype));
		}
	}
	return 0;
}

/* Element i of dtype at p as a double; false for a dtype it cannot read. */
static bool elem_get(const unsigned char *p, cep_dtype dtype, size_t i,
		     double *out)
{
	union {
		float f;
		double d;
		int8_t i8;
		int16_t i16;
		int32_t i32;
		int64_t i64;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
	} v;
	size_t esize = cep_dtype_size(dtype);

	if (esize == 0)
		return false;
	memcpy(&v, p + esize * i, esize);
	switch (dtype) {
	case CEP_DTYPE_FLOAT32: *out = v.f; return true;
	case CEP_DTYPE_FLOAT64: *out = v.d; return true;
	case CEP_DTYPE_FLOAT16: *out = half_to_float(v.u16); return true;
	case CEP_DTYPE_BFLOAT16: *out = bf16_to_float(v.u16); return true;
	case CEP_DTYPE_BOOL: *out = p[i] != 0; return true;
	case CEP_DTYPE_UINT8: *out = p[i]; return true;
	case CEP_DTYPE_INT8: *out = v.i8; return true;
	case CEP_DTYPE_UINT16: *out = v.u16; return true;
	case CEP_DTYPE_INT16: *out = v.i16; return true;
	case CEP_DTYPE_UINT32: *out = v.u32; return true;
	case CEP_DTYPE_INT32: *out = v.i32; return true;
	case CEP_DTYPE_UINT64: *out = (double)v.u64; return true;
	case CEP_DTYPE_INT64: *out = (double)v.i64; return true;
	case CEP_DTYPE_FLOAT8E4M3FN:
	case CEP_DTYPE_FLOAT8E4M3FNUZ:
	case CEP_DTYPE_FLOAT8E5M2:
	case CEP_DTYPE_FLOAT8E5M2FNUZ: *out = f8_to_double(p[i], dtype); return true;
	/* The 4-bit types: the low nibble of a byte each (client/cudaep.h). */
	case CEP_DTYPE_UINT4: *out = p[i] & 0xf; return true;
	case CEP_DTYPE_INT4: *out = (p[i] & 0xf) >= 8 ? (p[i] & 0xf) - 16 : p[i] & 0xf; return true;
	case CEP_DTYPE_FLOAT4E2M1: {
		static const double mag[8] = { 0, 0.5, 1, 1.5, 2, 3, 4, 6 };

		*out = p[i] & 8 ? -mag[p[i] & 7] : mag[p[i] & 7];
		return true;
	}
	case CEP_DTYPE_UNDEFINED: break;
	}
	return false;
}

int run_elem_checksum(const void *data, cep_dtype dtype, size_t n,
		      double *sum, double *abs_sum)
{
	double s = 0, a = 0, v;

	for (size_t i = 0; i < n; i++) {
		if (!elem_get(data, dtype, i, &v))
			return cep__set_error(CEP_EDTYPE, "cannot read values "
					      "of dtype %s",
					      cep_dtype_name(dtype));
		s += v;
		a += fabs(v);
	}
	*sum = s;
	*abs_sum = a;
	return 0;
}
