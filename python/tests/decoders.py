"""Tiny decoder-only language models written at test time, and their oracle.

gpt2_like() and llama_like() return the bytes of an ONNX model in the
interface Hugging Face's exporters (optimum) give a decoder with a cache:

    inputs   input_ids                   int64 [batch, sequence_length]
             attention_mask              int64 [batch, total_sequence_length]
             position_ids                int64 [batch, sequence_length]
             past_key_values.{i}.key     float [batch, kv_heads, past_sequence_length, head_dim]
             past_key_values.{i}.value   (the same)
    outputs  logits                      float [batch, sequence_length, vocab]
             present.{i}.key / .value    float [batch, kv_heads, total_sequence_length, head_dim]

with the attention written as the exporters write it, op by op: Q/K/V
MatMul and bias, Reshape/Transpose to heads, Concat(past, new) on the
sequence axis for the cache, a causal mask made from the shapes (the past's
length read from Shape of the first past input, the queries' positions
offset by it) plus the padding mask (1 - attention_mask) * -10000, Softmax,
the output projection and the residual. gpt2_like has learned position
embeddings gathered by position_ids, LayerNormalization and a GELU MLP;
llama_like has rotary embeddings computed from position_ids (Cos/Sin of
position * inv_freq, rotate-half), grouped-query attention (the cache keeps
kv_heads; K and V are repeated with Unsqueeze/Expand/Reshape before the
scores), RMS norms written with Pow/ReduceMean/Sqrt/Div and a SwiGLU MLP.
Weights are seeded normal numbers scaled so that the logits spread over a
few units: greedy decoding then has clear winners, and a backend's rounding
does not change the tokens.

reference_greedy() and reference_logits() run such a model in onnxruntime's
CPU provider with an exact-length cache, the oracle of the daemon's
generation (python/tests/test_generate.py); test_decoders.py checks the
models' cache wiring against themselves.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NEG = -10000.0  # added to a masked score; fits float16 too


class _Graph:
    """Nodes, initializers and fresh names of the graph being written."""

    def __init__(self, opset, rng):
        self.opset = opset
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.n = 0

    def name(self, hint):
        self.n += 1
        return "%s_%d" % (hint, self.n)

    def op(self, op_type, inputs, hint=None, **attrs):
        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out + "_node",
                                           **attrs))
        return out

    def const(self, value, dtype=np.float32, hint="c"):
        n = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), n))
        return n

    def weight(self, shape, scale, hint="w"):
        w = self.rng.standard_normal(shape) * scale
        return self.const(w, np.float32, hint)

    def linear(self, x, n_in, n_out, bias=True, scale=None, hint="proj"):
        y = self.op("MatMul", [x, self.weight((n_in, n_out), scale or n_in ** -0.5,
                                              hint + "_w")], hint)
        if bias:
            y = self.op("Add", [y, self.weight((n_out,), 0.1, hint + "_b")], hint + "_bias")
        return y

    def unsqueeze(self, x, axes):
        return self.op("Unsqueeze", [x, self.const(axes, np.int64, "axes")], "unsq")

    def reduce_mean(self, x):
        if self.opset >= 18:  # axes became an input
            return self.op("ReduceMean", [x, self.const([-1], np.int64, "axes")], "mean",
                           keepdims=1)
        return self.op("ReduceMean", [x], "mean", axes=[-1], keepdims=1)

    def dim(self, x, axis):
        """Dimension axis of x's shape, an int64 scalar."""
        return self.op("Gather", [self.op("Shape", [x], "shape"),
                                  self.const(axis, np.int64, "idx")], "dim", axis=0)


# ------------------------------------------------------------------- pieces

def _layer_norm(g, x, hidden):
    scale = g.const(1 + 0.1 * g.rng.standard_normal(hidden), hint="ln_g")
    bias = g.const(0.1 * g.rng.standard_normal(hidden), hint="ln_b")
    if g.opset >= 17:
        return g.op("LayerNormalization", [x, scale, bias], "ln", axis=-1, epsilon=1e-5)
    mean = g.reduce_mean(x)
    d = g.op("Sub", [x, mean], "centred")
    var = g.reduce_mean(g.op("Pow", [d, g.const(2.0, hint="two")], "sq"))
    std = g.op("Sqrt", [g.op("Add", [var, g.const(1e-5, hint="eps")], "var_eps")], "std")
    return g.op("Add", [g.op("Mul", [g.op("Div", [d, std], "normed"), scale], "scaled"), bias],
                "ln")


def _rms_norm(g, x, hidden):
    weight = g.const(1 + 0.1 * g.rng.standard_normal(hidden), hint="rms_w")
    ms = g.reduce_mean(g.op("Pow", [x, g.const(2.0, hint="two")], "sq"))
    rms = g.op("Sqrt", [g.op("Add", [ms, g.const(1e-6, hint="eps")], "ms_eps")], "rms")
    return g.op("Mul", [g.op("Div", [x, rms], "normed"), weight], "rms_norm")


def _heads(g, x, n, head_dim):
    """[B, S, n*head_dim] -> [B, n, S, head_dim]."""
    r = g.op("Reshape", [x, g.const([0, 0, n, head_dim], np.int64, "shape")], "split")
    return g.op("Transpose", [r], "heads", perm=[0, 2, 1, 3])


def _rotate(g, x, cos, sin, head_dim):
    """x * cos + rotate_half(x) * sin, x [B, n, S, head_dim]."""
    half = head_dim // 2
    axis = g.const([3], np.int64, "axis")
    x1 = g.op("Slice", [x, g.const([0], np.int64, "s"), g.const([half], np.int64, "e"), axis],
              "x1")
    x2 = g.op("Slice", [x, g.const([half], np.int64, "s"),
                        g.const([head_dim], np.int64, "e"), axis], "x2")
    rot = g.op("Concat", [g.op("Neg", [x2], "neg"), x1], "rot_half", axis=-1)
    return g.op("Add", [g.op("Mul", [x, cos], "xcos"), g.op("Mul", [rot, sin], "xsin")],
                "roped")


def _mask(g, attention_mask, first_past):
    """The additive mask [B, 1, S, T]: causal (a query at position
    past + i sees keys 0..past + i) plus padding ((1 - mask) * NEG)."""
    seq = g.dim("input_ids", 1)
    past = g.dim(first_past, 2)
    total = g.op("Add", [past, seq], "total")
    one = g.const(1, np.int64, "one")
    q_pos = g.op("Range", [past, total, one], "q_pos")          # [S]
    k_pos = g.op("Range", [g.const(0, np.int64, "zero"), total, one], "k_pos")  # [T]
    future = g.op("Less", [g.unsqueeze(q_pos, [1]), k_pos], "future")  # [S, T]
    causal = g.op("Mul", [g.op("Cast", [future], "future_f", to=TensorProto.FLOAT),
                          g.const(NEG, hint="neg")], "causal")
    pad = g.op("Cast", [attention_mask], "mask_f", to=TensorProto.FLOAT)   # [B, T]
    pad = g.op("Mul", [g.op("Sub", [g.const(1.0, hint="one_f"), pad], "unmask"),
                       g.const(NEG, hint="neg")], "pad")
    pad = g.unsqueeze(pad, [1, 2])                                 # [B, 1, 1, T]
    return g.op("Add", [pad, causal], "mask")                     # [B, 1, S, T]


def _attention(g, i, x, mask, hidden, heads, kv_heads, head_dim, rope=None):
    """One attention block's output (before the residual); writes the
    layer's present.{i}.* outputs."""
    q = _heads(g, g.linear(x, hidden, heads * head_dim, hint="q"), heads, head_dim)
    k = _heads(g, g.linear(x, hidden, kv_heads * head_dim, hint="k"), kv_heads, head_dim)
    v = _heads(g, g.linear(x, hidden, kv_heads * head_dim, hint="v"), kv_heads, head_dim)
    if rope is not None:
        q = _rotate(g, q, rope[0], rope[1], head_dim)
        k = _rotate(g, k, rope[0], rope[1], head_dim)
    for kind, new in (("key", k), ("value", v)):
        g.nodes.append(helper.make_node(
            "Concat", ["past_key_values.%d.%s" % (i, kind), new], ["present.%d.%s" % (i, kind)],
            name="present_%d_%s" % (i, kind), axis=2))
    k_all, v_all = "present.%d.key" % i, "present.%d.value" % i
    if kv_heads != heads:
        rep = heads // kv_heads
        expand = g.const([1, 1, rep, 1, 1], np.int64, "rep")
        back = g.const([0, heads, -1, head_dim], np.int64, "shape")
        k_all = g.op("Reshape", [g.op("Expand", [g.unsqueeze(k_all, [2]), expand], "k_rep"),
                                 back], "k_gqa")
        v_all = g.op("Reshape", [g.op("Expand", [g.unsqueeze(v_all, [2]), expand], "v_rep"),
                                 back], "v_gqa")
    kt = g.op("Transpose", [k_all], "kt", perm=[0, 1, 3, 2])
    scores = g.op("Mul", [g.op("MatMul", [q, kt], "qk"), g.const(head_dim ** -0.5, hint="scale")],
                  "scores")
    probs = g.op("Softmax", [g.op("Add", [scores, mask], "masked")], "probs", axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v_all], "ctx")], "ctx_t", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const([0, 0, heads * head_dim], np.int64, "shape")], "merged")
    return g.linear(ctx, heads * head_dim, hidden, hint="o")


def _gelu(g, x):
    half = g.op("Mul", [x, g.const(0.5, hint="half")], "half_x")
    erf = g.op("Erf", [g.op("Mul", [x, g.const(2 ** -0.5, hint="rsqrt2")], "x_r2")], "erf")
    return g.op("Mul", [half, g.op("Add", [erf, g.const(1.0, hint="one_f")], "erf1")], "gelu")


def _model(g, name, layers, kv_heads, head_dim, vocab, logits):
    i64, f32 = TensorProto.INT64, TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", i64,
                                            ["batch", "total_sequence_length"]),
              helper.make_tensor_value_info("position_ids", i64, ["batch", "sequence_length"])]
    outputs = [helper.make_tensor_value_info("logits", f32, ["batch", "sequence_length", vocab])]
    for i in range(layers):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                "past_key_values.%d.%s" % (i, kind), f32,
                ["batch", kv_heads, "past_sequence_length", head_dim]))
            outputs.append(helper.make_tensor_value_info(
                "present.%d.%s" % (i, kind), f32,
                ["batch", kv_heads, "total_sequence_length", head_dim]))
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="logits_out"))
    graph = helper.make_graph(g.nodes, name, inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", g.opset)],
                              producer_name="cudaep-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _check_args(opset, **dims):
    if opset < 13:
        raise ValueError("the decoders are written for opset >= 13, not %d" % opset)
    for k, v in dims.items():
        if int(v) < 1:
            raise ValueError("%s must be >= 1, not %r" % (k, v))


# ----------------------------------------------------------------- builders

def gpt2_like(vocab=64, layers=2, heads=2, head_dim=8, seed=0, opset=17, max_positions=512):
    """The bytes of a GPT-2-shaped decoder: token and learned position
    embeddings (gathered by position_ids), pre-LayerNorm blocks of
    multi-head attention and a GELU MLP, a final LayerNorm and the LM head."""
    _check_args(opset, vocab=vocab, layers=layers, heads=heads, head_dim=head_dim)
    g = _Graph(opset, np.random.default_rng(seed))
    hidden = heads * head_dim
    x = g.op("Add", [g.op("Gather", [g.weight((vocab, hidden), 1.0, "wte"), "input_ids"],
                          "tok_emb", axis=0),
                     g.op("Gather", [g.weight((max_positions, hidden), 0.5, "wpe"),
                                     "position_ids"], "pos_emb", axis=0)], "emb")
    mask = _mask(g, "attention_mask", "past_key_values.0.key")
    for i in range(layers):
        a = _attention(g, i, _layer_norm(g, x, hidden), mask, hidden, heads, heads, head_dim)
        x = g.op("Add", [x, a], "resid_attn")
        h = _gelu(g, g.linear(_layer_norm(g, x, hidden), hidden, 4 * hidden, hint="fc"))
        x = g.op("Add", [x, g.linear(h, 4 * hidden, hidden, hint="fc_out")], "resid_mlp")
    logits = g.linear(_layer_norm(g, x, hidden), hidden, vocab, bias=False,
                      scale=3 * hidden ** -0.5, hint="lm_head")
    return _model(g, "gpt2_like", layers, heads, head_dim, vocab, logits)


def llama_like(vocab=64, layers=2, heads=4, kv_heads=2, head_dim=8, seed=0, opset=17,
               rope_theta=10000.0):
    """The bytes of a Llama-shaped decoder: token embeddings, rotary
    position embeddings from position_ids, pre-RMS-norm blocks of
    grouped-query attention (kv_heads key/value heads, each shared by
    heads / kv_heads query heads) and a SwiGLU MLP, a final RMS norm and
    the LM head."""
    _check_args(opset, vocab=vocab, layers=layers, heads=heads, kv_heads=kv_heads,
                head_dim=head_dim)
    if heads % kv_heads or head_dim % 2:
        raise ValueError("heads (%d) must be a multiple of kv_heads (%d), head_dim (%d) even"
                         % (heads, kv_heads, head_dim))
    g = _Graph(opset, np.random.default_rng(seed))
    hidden = heads * head_dim
    x = g.op("Gather", [g.weight((vocab, hidden), 1.0, "embed"), "input_ids"], "tok_emb",
             axis=0)
    inv_freq = 1.0 / rope_theta ** (np.arange(0, head_dim, 2) / head_dim)
    pos = g.op("Cast", ["position_ids"], "pos_f", to=TensorProto.FLOAT)          # [B, S]
    freqs = g.op("Mul", [g.unsqueeze(pos, [2]), g.const(inv_freq, hint="inv_freq")],
                 "freqs")                                                        # [B, S, d/2]
    emb = g.op("Concat", [freqs, freqs], "rope_emb", axis=-1)                   # [B, S, d]
    rope = (g.unsqueeze(g.op("Cos", [emb], "cos"), [1]),                         # [B, 1, S, d]
            g.unsqueeze(g.op("Sin", [emb], "sin"), [1]))
    mask = _mask(g, "attention_mask", "past_key_values.0.key")
    for i in range(layers):
        a = _attention(g, i, _rms_norm(g, x, hidden), mask, hidden, heads, kv_heads, head_dim,
                       rope)
        x = g.op("Add", [x, a], "resid_attn")
        h = _rms_norm(g, x, hidden)
        gate = g.linear(h, hidden, 3 * hidden, bias=False, hint="gate")
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], "sig")], "silu")
        up = g.linear(h, hidden, 3 * hidden, bias=False, hint="up")
        down = g.linear(g.op("Mul", [silu, up], "swiglu"), 3 * hidden, hidden, bias=False,
                        hint="down")
        x = g.op("Add", [x, down], "resid_mlp")
    logits = g.linear(_rms_norm(g, x, hidden), hidden, vocab, bias=False,
                      scale=3 * hidden ** -0.5, hint="lm_head")
    return _model(g, "llama_like", layers, kv_heads, head_dim, vocab, logits)


# ------------------------------------------------------------------- oracle

class _Stepper:
    """A model in onnxruntime (CPU) fed step by step through its cache."""

    def __init__(self, model_bytes):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        self.sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
        self.past = {}
        for i in self.sess.get_inputs():
            if i.name.startswith("past_key_values."):
                _, kv, _, d = i.shape
                self.past[i.name] = np.zeros((1, kv, 0, d), np.float32)
        self.total = 0

    def step(self, tokens):
        """Feeds tokens (a list) after those fed so far; returns their
        logits [len(tokens), vocab]."""
        n = len(tokens)
        feeds = {"input_ids": np.asarray(tokens, np.int64).reshape(1, n),
                 "attention_mask": np.ones((1, self.total + n), np.int64),
                 "position_ids": np.arange(self.total, self.total + n,
                                           dtype=np.int64).reshape(1, n)}
        feeds.update(self.past)
        names = [o.name for o in self.sess.get_outputs()]
        outs = dict(zip(names, self.sess.run(names, feeds)))
        for k in self.past:
            self.past[k] = outs["present." + k[len("past_key_values."):]]
        self.total += n
        return outs["logits"][0]


def _stops(eos):
    if eos is None:
        return set()
    if isinstance(eos, (int, np.integer)):
        return {int(eos)}
    return {int(e) for e in eos}


def reference_greedy(model_bytes, prompt, max_new_tokens, eos=None):
    """The tokens greedy decoding makes after prompt (a list of ints): the
    prompt in one step with an empty cache, then one token a step, each the
    argmax of the last logits row; stops after max_new_tokens or after
    writing a token of eos (None, an int or a list), which is included."""
    stepper, stops = _Stepper(model_bytes), _stops(eos)
    logits = stepper.step(list(prompt))
    out = []
    while len(out) < max_new_tokens:
        t = int(np.argmax(logits[-1]))
        out.append(t)
        if t in stops or len(out) == max_new_tokens:
            break
        logits = stepper.step([t])
    return out


def reference_logits(model_bytes, tokens, one_by_one=False):
    """The logits [len(tokens), vocab] of tokens from an empty cache: in one
    step, or with one_by_one=True a token a step through the cache."""
    stepper = _Stepper(model_bytes)
    if not one_by_one:
        return stepper.step(list(tokens))
    return np.concatenate([stepper.step([t]) for t in tokens])


def vocab_of(model_bytes):
    """The vocabulary size of a decoder's logits (their last dimension)."""
    m = onnx.load_from_string(model_bytes)
    for o in m.graph.output:
        if o.name == "logits":
            return o.type.tensor_type.shape.dim[2].dim_value
    raise ValueError("the model has no logits output")
