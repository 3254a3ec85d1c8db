"""A BERT-like encoder as torch.onnx.export writes Hugging Face's BertModel
(eager attention, opset 17, dynamic batch), built with onnx.helper since
torch is not in the test environment, run through the daemon on the host
backend and compared with onnxruntime: the graph the transformer fusions
rewrite (GELU, MatMul + bias, attention with its Transposes) must give
onnxruntime's answer."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import cudaep

VOCAB, SEQ, HID, HEADS, FF, LAYERS = 50, 32, 64, 4, 128, 2
DH = HID // HEADS


def bert(path, rng):
    """Embeddings (word + position, LayerNormalization), then LAYERS
    encoder layers: Q/K/V Linears, heads split by Reshape to a shape
    gathered from the input's own Shape, K transposed straight to
    [B, H, D, S], scores divided by sqrt(DH) (a Constant), plus the
    extended mask (1 - mask) * float32's lowest, Softmax, the context
    transposed back and merged, the output Linear, residual and
    LayerNormalization, an Erf-GELU feed-forward, residual and
    LayerNormalization."""
    N = helper.make_node
    inits = []

    def const(name, value, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def weight(name, *shape, scale=None):
        s = scale if scale is not None else 1 / np.sqrt(shape[0])
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name))
        return name

    def linear(nodes, x, name, k, n):
        nodes += [N("MatMul", [x, weight(name + ".weight", k, n)], [name + "_mm"]),
                  N("Add", [weight(name + ".bias", n, scale=0.1), name + "_mm"], [name])]
        return name

    def norm(nodes, x, name):
        inits.append(numpy_helper.from_array((1 + 0.1 * rng.standard_normal(HID)).astype(np.float32), name + ".w"))
        inits.append(numpy_helper.from_array((0.1 * rng.standard_normal(HID)).astype(np.float32), name + ".b"))
        nodes.append(N("LayerNormalization", [x, name + ".w", name + ".b"], [name], axis=-1, epsilon=1e-12))
        return name

    nodes = [
        N("Gather", [weight("word", VOCAB, HID, scale=1.0), "input_ids"], ["we"]),
        N("Add", ["we", weight("pos", SEQ, HID, scale=0.1)], ["emb"]),
        N("Unsqueeze", ["attention_mask", const("ax1", [1])], ["m1"]),
        N("Unsqueeze", ["m1", const("ax2", [2])], ["m2"]),
        N("Cast", ["m2"], ["m3"], to=TensorProto.FLOAT),
        N("Sub", [const("one", 1.0, np.float32), "m3"], ["m4"]),
        N("Mul", ["m4", const("lowest", np.finfo(np.float32).min, np.float32)], ["ext"]),
    ]
    h = norm(nodes, "emb", "emb_ln")
    const("i0", 0)
    const("i1", 1)
    const("ax0", [0])
    const("heads", [HEADS, DH])
    const("hid", [HID])
    const("sqrt2", np.sqrt(2.0), np.float32)
    const("half", 0.5, np.float32)
    for layer in range(LAYERS):
        p = "l%d_" % layer
        nodes += [
            N("Shape", [h], [p + "shape"]),
            N("Gather", [p + "shape", "i0"], [p + "b"], axis=0),
            N("Gather", [p + "shape", "i1"], [p + "s"], axis=0),
            N("Unsqueeze", [p + "b", "ax0"], [p + "bu"]),
            N("Unsqueeze", [p + "s", "ax0"], [p + "su"]),
            N("Concat", [p + "bu", p + "su", "heads"], [p + "split"], axis=0),
            N("Concat", [p + "bu", p + "su", "hid"], [p + "merge"], axis=0),
        ]
        heads = {}
        for which, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])):
            y = linear(nodes, h, p + which, HID, HID)
            nodes += [N("Reshape", [y, p + "split"], [y + "_r"]),
                      N("Transpose", [y + "_r"], [y + "_h"], perm=perm)]
            heads[which] = y + "_h"
        nodes += [
            N("MatMul", [heads["query"], heads["key"]], [p + "scores"]),
            N("Constant", [], [p + "dh"], value=numpy_helper.from_array(
                np.array(np.sqrt(DH), np.float32), p + "dh")),
            N("Div", [p + "scores", p + "dh"], [p + "scaled"]),
            N("Add", [p + "scaled", "ext"], [p + "masked"]),
            N("Softmax", [p + "masked"], [p + "probs"], axis=-1),
            N("MatMul", [p + "probs", heads["value"]], [p + "ctx"]),
            N("Transpose", [p + "ctx"], [p + "ctx_t"], perm=[0, 2, 1, 3]),
            N("Reshape", [p + "ctx_t", p + "merge"], [p + "ctx_m"]),
        ]
        o = linear(nodes, p + "ctx_m", p + "attn_out", HID, HID)
        nodes.append(N("Add", [o, h], [p + "res1"]))
        ln1 = norm(nodes, p + "res1", p + "ln1")
        f1 = linear(nodes, ln1, p + "ff1", HID, FF)
        nodes += [
            N("Div", [f1, "sqrt2"], [p + "gu"]),
            N("Erf", [p + "gu"], [p + "ge"]),
            N("Add", [p + "ge", "one"], [p + "ga"]),
            N("Mul", [f1, p + "ga"], [p + "gm"]),
            N("Mul", [p + "gm", "half"], [p + "gelu"]),
        ]
        f2 = linear(nodes, p + "gelu", p + "ff2", FF, HID)
        nodes.append(N("Add", [f2, ln1], [p + "res2"]))
        h = norm(nodes, p + "res2", p + "out")
    nodes.append(N("Identity", [h], ["last_hidden_state"]))
    g = helper.make_graph(
        nodes, "bert",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", SEQ]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", SEQ])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", SEQ, HID])],
        inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def test_bert_like_encoder_matches_onnxruntime(daemon, tmp_path):
    rng = np.random.default_rng()
    path = str(tmp_path / "bert.onnx")
    bert(path, rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(daemon) as c, c.load(path) as s:
        assert s.inputs[0].shape == ("batch", SEQ)
        for batch in (2, 1, 3):
            ids = rng.integers(0, VOCAB, (batch, SEQ), dtype=np.int64)
            mask = np.ones((batch, SEQ), np.int64)
            # Padding at the end of every other sequence, as the benchmark does.
            mask[1::2, SEQ * 3 // 4:] = 0
            feed = {"input_ids": ids, "attention_mask": mask}
            got = s.run(feed)["last_hidden_state"]
            want = ref.run(None, feed)[0]
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
