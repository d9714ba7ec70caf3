"""A tiny Flax model trained for two epochs on dataio's jax.Array batches,
with an Orbax checkpoint of the model and the loader together, and a resume.

The images are the demo's (``dataio.demo.make_dataset``: procedural JPEGs in
four classes, made once into a cache folder); the pipeline decodes, crops a
random 64x64 region, flips and normalizes, and ``run("jax", sharding=...)``
hands each batch over as a global ``jax.Array`` on a one-axis mesh of this
host's devices. Mid-way through the second epoch the train state and the
loader's state are saved with an ``orbax.checkpoint.CheckpointManager``; a
new model and a new loader restore them and finish the epoch, and the
resumed batches are checked against the ones the first run saw.

    python examples/flax_train.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import dataio
import dataio.jax
from dataio.demo import CLASSES, cache_dir, make_dataset

IMAGES, BATCH, EPOCHS, SAVE_AT = 256, 32, 2, 12  # 8 steps an epoch: saved at step 4 of epoch 1


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.conv1 = nnx.Conv(3, 16, kernel_size=(5, 5), strides=(2, 2), rngs=rngs)
        self.conv2 = nnx.Conv(16, 32, kernel_size=(3, 3), strides=(2, 2), rngs=rngs)
        self.head = nnx.Linear(32, len(CLASSES), rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        x = jnp.transpose(x, (0, 2, 3, 1))  # the batch is NCHW; Flax convolutions take NHWC
        x = nnx.relu(self.conv1(x))
        x = nnx.relu(self.conv2(x))
        return self.head(x.mean(axis=(1, 2)))


def new_model() -> tuple[Net, nnx.Optimizer]:
    model = Net(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)


@nnx.jit
def train_step(model: Net, opt: nnx.Optimizer, images: jax.Array, labels: jax.Array) -> tuple[jax.Array, jax.Array]:
    def loss_fn(m: Net) -> tuple[jax.Array, jax.Array]:
        logits = m(images)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), logits

    (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    opt.update(model, grads)
    return loss, (logits.argmax(-1) == labels).mean()


def main() -> int:
    records = make_dataset(IMAGES, cache_dir())  # made once, then read from the cache
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(72).random_crop(h=64, w=64).hflip(p=0.5).normalize("imagenet"),
        dataio.slot("label").decode_bytes(),
        dataio.batch(BATCH, drop_last=True),  # the global batch
    )
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(AxisType.Auto,))  # jit places the rest
    sharding = NamedSharding(mesh, P("data"))
    ckpt = Path(tempfile.mkdtemp()) / "ckpt"
    mgr = ocp.CheckpointManager(ckpt, options=ocp.CheckpointManagerOptions(enable_async_checkpointing=False))

    model, opt = new_model()
    step, after_save = 0, []
    with pipe.bind(records).run("jax", seed=0, sharding=sharding) as loader:
        for epoch in range(EPOCHS):
            for batch in loader:
                assert batch["image"].sharding == sharding and batch["image"].shape == (BATCH, 3, 64, 64)
                loss, acc = train_step(model, opt, batch["image"], batch["label"])
                step += 1
                if step == SAVE_AT:
                    mgr.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(nnx.state((model, opt))),
                                                           loader=dataio.jax.CheckpointSave(loader)))
                elif step > SAVE_AT:
                    after_save.append(np.asarray(batch["label"]))
            print(f"epoch {epoch}: loss {float(loss):.3f}, batch accuracy {float(acc):.2f}, "
                  f"device transfer {loader.stats()['device_transfer_seconds']:.3f} s")

    # A new process would do this: a fresh model and loader, restored together.
    model, opt = new_model()
    with pipe.bind(records).run("jax", seed=0, sharding=sharding) as loader:
        restored = mgr.restore(SAVE_AT, args=ocp.args.Composite(state=ocp.args.StandardRestore(nnx.state((model, opt))),
                                                                loader=dataio.jax.CheckpointRestore(loader)))
        nnx.update((model, opt), restored["state"])
        resumed = []
        for batch in loader:
            loss, acc = train_step(model, opt, batch["image"], batch["label"])
            resumed.append(np.asarray(batch["label"]))
        print(f"resumed at step {SAVE_AT}: {len(resumed)} batches to the epoch's end, loss {float(loss):.3f}")
    assert len(resumed) == len(after_save) and all(np.array_equal(a, b) for a, b in zip(resumed, after_save)), \
        "the resumed run saw other batches than the first run after the checkpoint"
    mgr.close()
    print("flax_train: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
