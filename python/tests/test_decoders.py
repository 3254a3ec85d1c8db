"""The tiny decoders of decoders.py checked against themselves, without the
daemon: they load in onnxruntime, and a prompt run in one step gives the
logits that the same tokens fed one by one through the cache give (the
cache wiring, the causal mask's offset by the past and the positions are
right), for both builders; the oracle stops at its stop tokens."""
import numpy as np
import onnx
import pytest

from decoders import gpt2_like, llama_like, reference_greedy, reference_logits, vocab_of

BUILDERS = {
    "gpt2": lambda **kw: gpt2_like(**kw),
    "llama": lambda **kw: llama_like(**kw),
}
PROMPT = [1, 7, 3, 60, 22, 5, 9]


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_the_model_has_the_exporters_interface(kind):
    m = onnx.load_from_string(BUILDERS[kind]())
    ins = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
           for i in m.graph.input}
    outs = {o.name: [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
            for o in m.graph.output}
    kv = 2  # llama_like's kv_heads, gpt2_like's heads
    assert ins["input_ids"] == ["batch", "sequence_length"]
    assert ins["attention_mask"] == ["batch", "total_sequence_length"]
    assert ins["position_ids"] == ["batch", "sequence_length"]
    assert outs["logits"] == ["batch", "sequence_length", 64]
    for i in range(2):
        for kind_ in ("key", "value"):
            assert ins["past_key_values.%d.%s" % (i, kind_)] == \
                ["batch", kv, "past_sequence_length", 8]
            assert outs["present.%d.%s" % (i, kind_)] == \
                ["batch", kv, "total_sequence_length", 8]
    assert vocab_of(m.SerializeToString()) == 64


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_prefill_equals_one_token_a_step(kind, opset):
    model = BUILDERS[kind](opset=opset)
    whole = reference_logits(model, PROMPT)
    steps = reference_logits(model, PROMPT, one_by_one=True)
    assert whole.shape == steps.shape == (len(PROMPT), 64)
    np.testing.assert_allclose(whole, steps, rtol=1e-4, atol=1e-5)
    # Logits that spread: greedy decoding has clear winners.
    top2 = np.sort(whole, axis=-1)[:, -2:]
    assert whole.std() > 1.0 and (top2[:, 1] - top2[:, 0]).min() > 1e-3


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_half_prefill_then_steps(kind):
    """A prefill of part of the prompt then steps: the mask and positions
    offset by a past longer than one."""
    from decoders import _Stepper
    model = BUILDERS[kind]()
    s = _Stepper(model)
    head = s.step(PROMPT[:4])
    tail = np.concatenate([s.step(PROMPT[4:6]), s.step(PROMPT[6:])])
    np.testing.assert_allclose(np.concatenate([head, tail]), reference_logits(model, PROMPT),
                               rtol=1e-4, atol=1e-5)


def test_seeds_and_shapes_change_the_model():
    assert gpt2_like(seed=0) == gpt2_like(seed=0)
    assert gpt2_like(seed=0) != gpt2_like(seed=1)
    m = llama_like(vocab=100, layers=3, heads=6, kv_heads=3, head_dim=4)
    assert reference_logits(m, [1, 2, 99]).shape == (3, 100)
    with pytest.raises(ValueError, match="kv_heads"):
        llama_like(heads=4, kv_heads=3)


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_reference_greedy_is_the_argmax_chain_and_stops_at_eos(kind):
    model = BUILDERS[kind]()
    toks = reference_greedy(model, PROMPT, 12)
    assert len(toks) == 12 and all(0 <= t < 64 for t in toks)
    # Each token is the argmax of the logits of everything before it.
    logits = reference_logits(model, PROMPT + toks[:-1])
    assert [int(t) for t in np.argmax(logits[len(PROMPT) - 1:], axis=-1)] == toks
    eos = toks[4]
    first = toks.index(eos)
    assert reference_greedy(model, PROMPT, 12, eos=eos) == toks[:first + 1]
    assert reference_greedy(model, PROMPT, 12, eos=[999, eos]) == toks[:first + 1]
    assert reference_greedy(model, PROMPT, 1) == toks[:1]
