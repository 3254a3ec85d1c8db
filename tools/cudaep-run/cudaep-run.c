/*
 * cudaep-run.c — the first tool a user reaches for: loads an ONNX model
 * through cudaepd, feeds it inputs from .npy files or random ones, runs it
 * a number of times and prints the model's inputs and outputs, the first
 * run's latency, statistics over the timed runs, and a checksum of every
 * output, in the manner of onnxruntime_perf_test.
 *
 * All tensors live in one shared-memory region: the inputs, then room for
 * each output sized from the inputs' shapes where the model's output shapes
 * say enough. Where they do not, cep_run() fails with CEP_ENOSPC and tells
 * the room needed; the region is then remade bigger and the run repeated.
 * Host-side arrays (.npy files, random values) are in cudaep-run-npy.c.
 *
 * With --generate N and a decoder model it generates N tokens instead and
 * times them (cudaep-run-gen.c).
 *
 * Exit status: 0 on success, 1 when anything fails (with the daemon's
 * message), 2 for a usage error.
 */
#include "tools/cudaep-run/cudaep-run.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

#define RUN_ALIGN      256     /* bytes; tensor offsets in the region */
#define RUN_MAX_TRIES  3       /* cep_run calls of one run, growing outputs */
#define RUN_MAX_ITERS  10000000UL
#define RUN_MAX_DIM    INT32_MAX

/* ------------------------------------------------------------ messages */

/* Prints "cudaep-run: <what>: <why>", why being the library's (or the
 * daemon's) message for err, and just "cudaep-run: <why>" for a NULL fmt;
 * returns err. */
static int lib_fail(int err, const char *fmt, ...)
{
	const char *why = cep_last_error();
	va_list ap;

	fputs("cudaep-run: ", stderr);
	if (fmt != NULL) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputs(": ", stderr);
	}
	fprintf(stderr, "%s\n", why[0] != '\0' ? why : cep_strerror(err));
	return err;
}

/* Prints "cudaep-run: <message>" for a fault found here; returns err. */
static int tool_fail(int err, const char *fmt, ...)
{
	va_list ap;

	fputs("cudaep-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return err;
}

/* A remark on stderr that does not stop the run; --quiet silences it. */
static void note(const struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->opt.quiet)
		return;
	fputs("cudaep-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------- options */

static void usage(FILE *f)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];

	if (cep_default_socket_path(path, sizeof(path)) != 0)
		snprintf(path, sizeof(path), "(too long)");
	fprintf(f,
		"Usage: cudaep-run [OPTIONS] MODEL.onnx\n"
		"\nLoads MODEL.onnx through cudaepd, runs it and prints its "
		"inputs and outputs,\nthe first run's latency, min/p50/p99/mean "
		"latency over the timed runs, and\nthe shape and checksum (sum, "
		"sum of absolute values) of every output.\nInputs not given as "
		".npy files get random values.\n"
		"\nOptions:\n"
		"  -s, --socket PATH        the daemon's socket (here: %s)\n"
		"  -i, --input NAME=FILE    take input NAME from a .npy file "
		"(repeatable)\n"
		"  -d, --dim NAME=VALUE     bind symbolic dimension NAME "
		"(repeatable; an\n"
		"                           unbound one is 1)\n"
		"  -o, --output NAME=FILE   save output NAME as a .npy file "
		"(repeatable)\n"
		"  -n, --iters N            timed runs (default 100)\n"
		"  -w, --warmup N           untimed runs before them (default "
		"3, at least 1;\n"
		"                           the first plans the shapes and is "
		"reported)\n"
		"      --seed N             seed of the random inputs (default "
		"0): floats\n"
		"                           uniform in [-1, 1), integers in "
		"[0, 10)\n"
		"  -p, --precision P        fp32 (default), tf32, fp16 or bf16\n"
		"\nGeneration, with a decoder model (inputs input_ids, past key/value "
		"cache):\n"
		"  -g, --generate N         generate N tokens after the prompt "
		"instead of\n"
		"                           timing runs; print them, time to first "
		"token,\n"
		"                           decode tokens/s and inter-token latency "
		"p50/p99\n"
		"      --prompt 1,2,3       the prompt's token ids\n"
		"      --prompt-len L       a prompt of tokens 1..L (default 16)\n"
		"      --temperature T      0 (default): greedy; else sample at T\n"
		"      --top-k K            sample among the K likeliest (0, the "
		"default: all)\n"
		"      --top-p P            among the fewest whose probability "
		"reaches P,\n"
		"                           in (0, 1] (default 1)\n"
		"      --eos ID             a stop token (repeatable, at most %d); "
		"--seed\n"
		"                           seeds the sampler\n"
		"\n"
		"  -q, --quiet              print only latency and results\n"
		"  -j, --json               print one JSON object\n"
		"  -h, --help               print this text\n"
		"  -V, --version            print the version\n"
		"\nExit status: 0 on success, 1 when anything fails, 2 for a "
		"usage error.\n",
		path, CEP_GEN_STOP_MAX);
}

/* Splits "NAME=REST" at its first '=' into name (of len bytes); returns
 * REST, or NULL when there is no '=', no name, or it is too long. */
static const char *parse_pair(const char *arg, char *name, size_t len)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL || eq == arg || (size_t)(eq - arg) >= len ||
	    eq[1] == '\0')
		return NULL;
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = '\0';
	return eq + 1;
}

static int opt_file(struct run_file_arg *list, int *n, const char *opt,
		    const char *arg)
{
	struct run_file_arg *a = &list[*n];

	if (*n == CEP_MAX_IO)
		return run_usage_fail("at most %d %s options", CEP_MAX_IO, opt);
	a->path = parse_pair(arg, a->name, sizeof(a->name));
	if (a->path == NULL)
		return run_usage_fail("%s wants NAME=FILE.npy, not '%s'", opt, arg);
	for (int i = 0; i < *n; i++)
		if (strcmp(list[i].name, a->name) == 0)
			return run_usage_fail("%s %s given twice", opt, a->name);
	(*n)++;
	return 0;
}

static int opt_dim(struct run_opts *o, const char *arg)
{
	struct run_sym *d = &o->dims[o->n_dims];
	unsigned long long v;
	const char *val;

	if (o->n_dims == RUN_MAX_SYMS)
		return run_usage_fail("at most %d --dim options", RUN_MAX_SYMS);
	val = parse_pair(arg, d->name, sizeof(d->name));
	if (val == NULL || !run_parse_ulong(val, 0, RUN_MAX_DIM, &v))
		return run_usage_fail("--dim wants NAME=VALUE with VALUE from 0 to "
				      "%d, not '%s'", RUN_MAX_DIM, arg);
	for (int i = 0; i < o->n_dims; i++)
		if (strcmp(o->dims[i].name, d->name) == 0)
			return run_usage_fail("--dim %s given twice", d->name);
	d->value = (int64_t)v;
	d->from = "--dim";
	o->n_dims++;
	return 0;
}

/* Fills o from the command line. Returns -1 to go on and run, or the exit
 * status to leave with (after --help, --version or a usage error). */
static int opts_parse(struct run_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"input", required_argument, NULL, 'i'},
		{"dim", required_argument, NULL, 'd'},
		{"output", required_argument, NULL, 'o'},
		{"iters", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'w'},
		{"seed", required_argument, NULL, RUN_LONGOPT_SEED},
		{"precision", required_argument, NULL, 'p'},
		{"generate", required_argument, NULL, 'g'},
		{"prompt", required_argument, NULL, RUN_LONGOPT_PROMPT},
		{"prompt-len", required_argument, NULL, RUN_LONGOPT_PROMPT_LEN},
		{"temperature", required_argument, NULL, RUN_LONGOPT_TEMPERATURE},
		{"top-k", required_argument, NULL, RUN_LONGOPT_TOP_K},
		{"top-p", required_argument, NULL, RUN_LONGOPT_TOP_P},
		{"eos", required_argument, NULL, RUN_LONGOPT_EOS},
		{"quiet", no_argument, NULL, 'q'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	unsigned long long v;
	bool gen_seen = false;
	int opt, ret = 0;

	o->iters = 100;
	o->warmup = 3;
	o->gen.prompt_len = 16;
	o->gen.top_p = 1;
	while ((opt = getopt_long(argc, argv, "s:i:d:o:n:w:p:g:qjhV", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case RUN_LONGOPT_PROMPT:
		case RUN_LONGOPT_PROMPT_LEN:
		case RUN_LONGOPT_TEMPERATURE:
		case RUN_LONGOPT_TOP_K:
		case RUN_LONGOPT_TOP_P:
		case RUN_LONGOPT_EOS:
			gen_seen = true;
			/* fall through */
		case 'g':
			ret = run_gen_opt(o, opt, optarg);
			break;
		case 's':
			o->socket = optarg;
			break;
		case 'i':
			ret = opt_file(o->inputs, &o->n_inputs, "--input", optarg);
			break;
		case 'o':
			ret = opt_file(o->outputs, &o->n_outputs, "--output",
				       optarg);
			break;
		case 'd':
			ret = opt_dim(o, optarg);
			break;
		case 'n':
			if (!run_parse_ulong(optarg, 1, RUN_MAX_ITERS, &v))
				return run_usage_fail("--iters wants a count from "
						      "1 to %lu, not '%s'",
						      RUN_MAX_ITERS, optarg);
			o->iters = (unsigned long)v;
			break;
		case 'w':
			if (!run_parse_ulong(optarg, 1, RUN_MAX_ITERS, &v))
				return run_usage_fail("--warmup wants a count from "
						      "1 to %lu, not '%s'",
						      RUN_MAX_ITERS, optarg);
			o->warmup = (unsigned long)v;
			break;
		case RUN_LONGOPT_SEED:
			if (!run_parse_ulong(optarg, 0, UINT64_MAX, &v))
				return run_usage_fail("--seed wants an unsigned "
						      "integer, not '%s'", optarg);
			o->seed = v;
			break;
		case 'p': {
			int k = 0;

			while (k < 4 && strcmp(optarg, run_precision_names[k]) != 0)
				k++;
			if (k == 4)
				return run_usage_fail("--precision wants fp32, tf32, "
						      "fp16 or bf16, not '%s'",
						      optarg);
			o->precision = (cep_precision)k;
			break;
		}
		case 'q':
			o->quiet = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			return RUN_EXIT_OK;
		case 'V':
			printf("cudaep-run %s\n", CEP_VERSION);
			return RUN_EXIT_OK;
		default:
			fputs("Try 'cudaep-run --help'.\n", stderr);
			return RUN_EXIT_USAGE;
		}
		if (ret != 0)
			return ret;
	}
	if (optind == argc)
		return run_usage_fail("no model given");
	if (argc - optind > 1)
		return run_usage_fail("one model at a time, not '%s' as well",
				      argv[optind + 1]);
	o->model = argv[optind];
	ret = run_gen_opts_check(o, gen_seen);
	return ret != 0 ? ret : -1;
}

/* ------------------------------------------------------------- binding */

static struct run_sym *sym_find(struct run *r, const char *name)
{
	for (int i = 0; i < r->n_syms; i++)
		if (strcmp(r->syms[i].name, name) == 0)
			return &r->syms[i];
	return NULL;
}

static int sym_bind(struct run *r, const char *name, int64_t value,
		    const char *from)
{
	struct run_sym *s = &r->syms[r->n_syms];

	if (r->n_syms == RUN_MAX_SYMS)
		return tool_fail(CEP_ELIMIT, "the model has more than %d "
				 "symbolic dimensions", RUN_MAX_SYMS);
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->value = value;
	s->from = from;
	r->n_syms++;
	return 0;
}

/* Whether the comma-separated list holds word. */
static bool list_has(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

/* The model's inputs and outputs, comma separated, for messages. */
static const char *names_fmt(char *buf, size_t len, const cep_session *s,
			     bool outputs)
{
	int n = outputs ? cep_session_output_count(s)
			: cep_session_input_count(s);
	size_t pos = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && pos < len; i++) {
		const cep_tensor_info *t = outputs ? cep_session_output(s, i)
						   : cep_session_input(s, i);

		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s",
					i ? ", " : "", t->name);
	}
	return buf;
}

/* Whether the model has a symbolic dimension called name; all of its
 * symbols are listed into buf (len bytes) for messages either way. */
static bool model_syms(const cep_session *s, const char *name, char *buf,
		       size_t len)
{
	size_t pos = 0;
	bool found = false;

	buf[0] = '\0';
	for (int k = 0; k < 2; k++) {
		int n = k ? cep_session_output_count(s)
			  : cep_session_input_count(s);

		for (int i = 0; i < n; i++) {
			const cep_tensor_info *t = k ? cep_session_output(s, i)
						     : cep_session_input(s, i);

			for (int d = 0; d < t->rank; d++) {
				const char *sym = t->dim_params[d];

				if (t->dims[d] >= 0 || sym[0] == '\0')
					continue;
				if (strcmp(sym, name) == 0)
					found = true;
				/* Each symbol once, however often it occurs. */
				if (!list_has(buf, sym) && pos < len)
					pos += (size_t)snprintf(buf + pos,
								len - pos,
								"%s%s",
								pos ? ", " : "",
								sym);
			}
		}
	}
	return found;
}

/* Checks that every --input, --output and --dim names something of the
 * model, before any file is read. */
static int names_check(struct run *r)
{
	struct run_opts *o = &r->opt;
	char list[1024];

	for (int i = 0; i < o->n_inputs; i++)
		if (!o->inputs[i].used)
			return tool_fail(CEP_ENOENT, "--input %s: %s has no "
					 "input '%s'; its inputs are: %s",
					 o->inputs[i].name, o->model,
					 o->inputs[i].name,
					 names_fmt(list, sizeof(list), r->s,
						   false));
	for (int i = 0; i < o->n_outputs; i++)
		if (!o->outputs[i].used)
			return tool_fail(CEP_ENOENT, "--output %s: %s has no "
					 "output '%s'; its outputs are: %s",
					 o->outputs[i].name, o->model,
					 o->outputs[i].name,
					 names_fmt(list, sizeof(list), r->s,
						   true));
	for (int i = 0; i < o->n_dims; i++)
		if (!model_syms(r->s, o->dims[i].name, list, sizeof(list)))
			return tool_fail(CEP_ENOENT, "--dim %s: %s has no "
					 "symbolic dimension '%s'; %s%s",
					 o->dims[i].name, o->model,
					 o->dims[i].name,
					 list[0] != '\0' ? "its symbols are: "
							  : "it has none",
					 list);
	return 0;
}

/* Checks an input read from a .npy file against the model and binds the
 * symbols its shape fixes. */
static int input_from_file(struct run *r, struct run_in *in)
{
	const cep_tensor_info *t = in->info;
	const struct run_array *a = &in->arr;
	char want[256], got[256];
	int ret;

	if (a->dtype != t->dtype && t->dtype == CEP_DTYPE_BFLOAT16)
		return tool_fail(CEP_EDTYPE, "input '%s' is bfloat16, which "
				 "numpy has no dtype for (%s holds %s); leave "
				 "the input out to get random values",
				 t->name, in->path, cep_dtype_name(a->dtype));
	if (a->dtype != t->dtype)
		return tool_fail(CEP_EDTYPE, "input '%s' is %s, but %s holds "
				 "%s; convert it with a.astype('%s')",
				 t->name, cep_dtype_name(t->dtype), in->path,
				 cep_dtype_name(a->dtype),
				 cep_dtype_name(t->dtype));
	run_info_shape_fmt(want, sizeof(want), t);
	run_shape_fmt(got, sizeof(got), a->shape, a->rank);
	if (a->rank != t->rank)
		return tool_fail(CEP_ESHAPE, "input '%s' has shape %s, but %s "
				 "holds shape %s", t->name, want, in->path, got);
	for (int d = 0; d < t->rank; d++) {
		const char *sym = t->dim_params[d];
		struct run_sym *s;

		if (t->dims[d] >= 0 && a->shape[d] != t->dims[d])
			return tool_fail(CEP_ESHAPE, "input '%s' has shape %s, "
					 "but %s holds shape %s (dimension %d)",
					 t->name, want, in->path, got, d);
		if (t->dims[d] >= 0 || sym[0] == '\0')
			continue;
		s = sym_find(r, sym);
		if (s == NULL) {
			ret = sym_bind(r, sym, a->shape[d], in->path);
			if (ret != 0)
				return ret;
		} else if (s->value != a->shape[d]) {
			return tool_fail(CEP_ESHAPE, "input '%s': dimension %d "
					 "('%s') is %" PRId64 " in %s, but "
					 "%s=%" PRId64 " from %s", t->name, d,
					 sym, a->shape[d], in->path, sym,
					 s->value, s->from);
		}
	}
	return 0;
}

/* Gives an input without a file a shape (bound symbols, else 1) and
 * random values. */
static int input_random(struct run *r, struct run_in *in, uint64_t *rng)
{
	const cep_tensor_info *t = in->info;
	int64_t shape[CEP_MAX_RANK];
	int ret;

	for (int d = 0; d < t->rank; d++) {
		const char *sym = t->dim_params[d];
		struct run_sym *s;

		shape[d] = t->dims[d];
		if (t->dims[d] >= 0)
			continue;
		shape[d] = 1;
		if (sym[0] == '\0') {
			note(r, "input '%s': dimension %d is dynamic and has no "
			     "name; using 1 (pass the input as a .npy file to "
			     "choose)", t->name, d);
			continue;
		}
		s = sym_find(r, sym);
		if (s != NULL) {
			shape[d] = s->value;
			continue;
		}
		note(r, "symbolic dimension '%s' is not bound; using 1 (bind "
		     "it with --dim %s=N)", sym, sym);
		ret = sym_bind(r, sym, 1, "the default");
		if (ret != 0)
			return ret;
	}
	ret = run_array_init(&in->arr, t->dtype, t->rank, shape);
	if (ret == 0)
		ret = run_elem_fill(in->arr.data, t->dtype,
				    run_shape_numel(shape, t->rank), rng);
	if (ret != 0)
		return lib_fail(ret, "input '%s'", t->name);
	return 0;
}

/* Bytes an output needs when its dtype is known and every dimension fixed
 * or bound; 0 (to be learnt from CEP_ENOSPC) otherwise. */
static size_t output_room(struct run *r, const cep_tensor_info *t)
{
	size_t room = cep_dtype_size(t->dtype);

	for (int d = 0; d < t->rank; d++) {
		const struct run_sym *s = NULL;
		int64_t v = t->dims[d];

		if (v < 0 && t->dim_params[d][0] != '\0')
			s = sym_find(r, t->dim_params[d]);
		if (v < 0 && s == NULL)
			return 0;
		if (v < 0)
			v = s->value;
		if (v != 0 && room > SIZE_MAX / (uint64_t)v)
			return 0;
		room *= (size_t)v;
	}
	return room;
}

/* Matches the options with the model, reads the input files, makes the
 * random inputs and sizes the outputs. */
static int run_bind(struct run *r)
{
	struct run_opts *o = &r->opt;
	uint64_t rng = o->seed;
	int ret;
	int n_in = cep_session_input_count(r->s);
	int n_out = cep_session_output_count(r->s);

	if (n_in > CEP_MAX_IO || n_out > CEP_MAX_IO)
		return tool_fail(CEP_ELIMIT, "%s has %d inputs and %d outputs; "
				 "a run takes at most %d of each", o->model,
				 n_in, n_out, CEP_MAX_IO);
	r->n_in = n_in;
	r->n_out = n_out;
	for (int i = 0; i < r->n_in; i++) {
		r->in[i].info = cep_session_input(r->s, i);
		for (int k = 0; k < o->n_inputs; k++)
			if (strcmp(o->inputs[k].name, r->in[i].info->name) == 0) {
				r->in[i].path = o->inputs[k].path;
				o->inputs[k].used = true;
			}
	}
	for (int i = 0; i < r->n_out; i++) {
		r->out[i].info = cep_session_output(r->s, i);
		for (int k = 0; k < o->n_outputs; k++)
			if (strcmp(o->outputs[k].name, r->out[i].info->name) == 0) {
				r->out[i].path = o->outputs[k].path;
				o->outputs[k].used = true;
			}
	}
	ret = names_check(r);
	if (ret != 0)
		return ret;

	/* --dim first, then the files' shapes, then defaults: a file that
	 * disagrees with --dim is an error, not a silent override. */
	memcpy(r->syms, o->dims, sizeof(o->dims[0]) * (size_t)o->n_dims);
	r->n_syms = o->n_dims;
	for (int i = 0; i < r->n_in; i++) {
		struct run_in *in = &r->in[i];

		if (in->path == NULL)
			continue;
		ret = run_npy_read(&in->arr, in->path);
		if (ret != 0)
			return lib_fail(ret, "--input %s", in->info->name);
		ret = input_from_file(r, in);
		if (ret != 0)
			return ret;
	}
	for (int i = 0; i < r->n_in; i++) {
		if (r->in[i].path != NULL)
			continue;
		ret = input_random(r, &r->in[i], &rng);
		if (ret != 0)
			return ret;
	}
	for (int i = 0; i < r->n_out; i++)
		r->out[i].room = output_room(r, r->out[i].info);
	return 0;
}

/* -------------------------------------------------------------- running */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static size_t align_up(size_t n)
{
	return (n + RUN_ALIGN - 1) / RUN_ALIGN * RUN_ALIGN;
}

/* Output slices as cep_run() wants them: room, and dtype and shape left
 * to the model (a previous run overwrote them). */
static void outputs_arm(struct run *r)
{
	for (int i = 0; i < r->n_out; i++)
		r->tout[i] = (cep_tensor){
			.name = r->out[i].info->name,
			.region = r->r,
			.offset = r->out[i].offset,
			.bytes = r->out[i].room,
		};
}

/* Places the inputs and outputs in the region, remaking it when it is too
 * small, and copies the inputs in. */
static int run_layout(struct run *r)
{
	size_t off = 0;
	int ret;

	for (int i = 0; i < r->n_in; i++) {
		r->in[i].offset = off;
		off = align_up(off + r->in[i].arr.bytes);
	}
	for (int i = 0; i < r->n_out; i++) {
		r->out[i].offset = off;
		off = align_up(off + r->out[i].room);
	}
	if (r->r == NULL || cep_region_size(r->r) < off) {
		cep_region_free(r->r);
		r->r = NULL;
		ret = cep_region_new(r->c, off > 0 ? off : 1, &r->r);
		if (ret != 0)
			return lib_fail(ret, "cannot make a region of %zu bytes",
					off);
	}
	for (int i = 0; i < r->n_in; i++) {
		const struct run_in *in = &r->in[i];
		cep_tensor *t = &r->tin[i];

		if (in->arr.bytes > 0)
			memcpy((char *)cep_region_data(r->r) + in->offset,
			       in->arr.data, in->arr.bytes);
		*t = (cep_tensor){
			.name = in->info->name,
			.region = r->r,
			.offset = in->offset,
			.bytes = in->arr.bytes,
			.dtype = in->arr.dtype,
			.rank = in->arr.rank,
		};
		memcpy(t->shape, in->arr.shape,
		       sizeof(t->shape[0]) * (size_t)in->arr.rank);
	}
	outputs_arm(r);
	return 0;
}

/* One run, timed around cep_run(); when an output's room was too small,
 * the region grows and the time includes the attempts. */
static int run_once(struct run *r, unsigned long n, double *us)
{
	bool grown;
	double t0;
	int ret;

	outputs_arm(r);
	t0 = now_us();
	for (int attempt = 1;; attempt++) {
		ret = cep_run(r->s, r->tin, (size_t)r->n_in, r->tout,
			      (size_t)r->n_out);
		if (ret != CEP_ENOSPC || attempt == RUN_MAX_TRIES)
			break;
		grown = false;
		for (int i = 0; i < r->n_out; i++)
			if (r->tout[i].bytes > r->out[i].room) {
				r->out[i].room = r->tout[i].bytes;
				grown = true;
			}
		if (!grown)
			break;
		ret = run_layout(r);
		if (ret != 0)
			return ret;
	}
	*us = now_us() - t0;
	if (ret != 0)
		return lib_fail(ret, "run %lu of %s", n, r->opt.model);
	return 0;
}

/* The daemon's kernel counters after the first run: with those before
 * the load, they say whether the model waited for kernels to compile.
 * Only informative, so a daemon that cannot say is no error. */
static void run_kernels_after(struct run *r)
{
	if (cep_kernel_stats_get(r->c, &r->k_after) != 0)
		memset(&r->k_after, 0, sizeof(r->k_after));
}

static int run_loop(struct run *r)
{
	const struct run_opts *o = &r->opt;
	double us;
	int ret;

	ret = run_layout(r);
	if (ret != 0)
		return ret;
	for (unsigned long i = 0; i < o->warmup; i++) {
		ret = run_once(r, i + 1, i == 0 ? &r->first_us : &us);
		if (ret != 0)
			return ret;
		if (i == 0)
			run_kernels_after(r);
	}
	for (unsigned long i = 0; i < o->iters; i++) {
		ret = run_once(r, o->warmup + i + 1, &r->lat_us[i]);
		if (ret != 0)
			return ret;
		if (i == 0 && o->warmup == 0)
			run_kernels_after(r);
	}
	return 0;
}

/* Checksums the last run's outputs and saves those asked for. */
static int run_results(struct run *r)
{
	for (int i = 0; i < r->n_out; i++) {
		const cep_tensor *t = &r->tout[i];
		const char *data = (const char *)cep_region_data(r->r) +
				   r->out[i].offset;
		int ret;

		ret = run_elem_checksum(data, t->dtype,
					run_shape_numel(t->shape, t->rank),
					&r->out[i].sum, &r->out[i].abs_sum);
		if (ret == 0 && r->out[i].path != NULL)
			ret = run_npy_write(r->out[i].path, t->dtype, t->rank,
					    t->shape, data, t->bytes);
		if (ret != 0)
			return lib_fail(ret, "output '%s'", t->name);
	}
	return 0;
}

/* ----------------------------------------------------------------- main */

static int run_main(struct run *r)
{
	const struct run_opts *o = &r->opt;
	cep_session_options so = { .precision = o->precision };
	double t0;
	int ret;

	if (o->socket != NULL)
		snprintf(r->sock, sizeof(r->sock), "%s", o->socket);
	else if (cep_default_socket_path(r->sock, sizeof(r->sock)) != 0)
		snprintf(r->sock, sizeof(r->sock), "(default path too long)");
	r->lat_us = calloc(o->iters, sizeof(r->lat_us[0]));
	if (r->lat_us == NULL)
		return tool_fail(CEP_ENOMEM, "out of memory for %lu latencies",
				 o->iters);
	ret = cep_connect(o->socket, "cudaep-run", &r->c);
	if (ret != 0)
		return lib_fail(ret, NULL);
	if (cep_kernel_stats_get(r->c, &r->k_before) != 0)
		memset(&r->k_before, 0, sizeof(r->k_before));
	t0 = now_us();
	ret = cep_session_load(r->c, o->model, &so, &r->s);
	r->load_us = now_us() - t0;
	if (ret != 0)
		return lib_fail(ret, "cannot load %s", o->model);
	if (o->gen.gen_tokens != 0)
		return run_generate(r);
	ret = run_bind(r);
	if (ret != 0)
		return ret;
	if (!o->quiet && !o->json)
		run_print_model(r);
	ret = run_loop(r);
	if (ret == 0)
		ret = run_results(r);
	if (ret != 0)
		return ret;
	run_print_results(r);
	if (fflush(stdout) != 0 || ferror(stdout))
		return tool_fail(CEP_EIO, "cannot write the output");
	return 0;
}

static void run_close(struct run *r)
{
	for (int i = 0; i < r->n_in; i++)
		run_array_close(&r->in[i].arr);
	cep_region_free(r->r);
	cep_session_free(r->s);
	cep_close(r->c);
	free(r->lat_us);
	free(r->opt.gen.prompt);
}

int main(int argc, char **argv)
{
	/* static: tens of KiB of tensor descriptions. */
	static struct run r;
	int ret;

	ret = opts_parse(&r.opt, argc, argv);
	if (ret >= 0) {
		free(r.opt.gen.prompt);
		return ret;
	}
	ret = run_main(&r);
	run_close(&r);
	return ret == 0 ? RUN_EXIT_OK : RUN_EXIT_FAIL;
}
