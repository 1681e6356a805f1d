"""Feature refresh: recompute PSDA's pairing as the model's features move.

The paper computes its matchings from the features of the full source and target
datasets and notes that they "need to be periodically updated throughout training as
the feature distributions shift with each model update" (Method, "Cost computation").
This module makes that a few lines:

- :func:`extract_features` runs a feature extractor over a dataset in index order
  (eval mode, ``torch.no_grad``, its own sequential DataLoader, a progress bar on
  stderr) and restores the model's training mode;
- :func:`refresh` extracts both datasets and calls ``sampler.update(...)``;
- :class:`RefreshSchedule` says when: every N optimiser steps and/or every N epochs;
- :class:`FeatureRefresher` ties the three together and can compute the new matching
  in a background thread (the Go core releases the GIL), so training keeps going.

Timing guarantees. By default (``effective="epoch"``) ``sampler.update`` takes effect
at the sampler's next epoch and never inside a running one, so batches already queued
(DataLoader prefetching, worker processes) always come from one matching. In background
mode the new matching is computed while training continues and joined at the next
:meth:`FeatureRefresher.epoch_end` (or :meth:`FeatureRefresher.wait`), i.e. before the
next epoch starts: the thread only computes the plan, and the join installs it (a psda
sampler's; another object's ``update`` installs when it ends). The epoch in which a
pairing first appears is therefore the same on every run and on every rank, whatever
the thread's speed: a refresh started at one epoch's end is used from the epoch after
the next join.

With ``effective="batch"`` the rest of the running epoch is re-grouped from the new
features too (the same rows, each still served exactly as often: see
``BatchSampler.update``): in the foreground from the next batch the sampler hands out;
in background mode from one batch later: if b is the next batch the sampler would hand
out when :meth:`~FeatureRefresher.refresh` runs, the rest is re-formed from batch b + 1
(the batch after the one the next step takes). The thread prepares that rest; it is
installed at the next :meth:`FeatureRefresher.step` (or :meth:`~FeatureRefresher.wait`,
:meth:`~FeatureRefresher.epoch_end`, :meth:`~FeatureRefresher.state_dict`, whichever
comes first), where training waits if the thread is still running. Only if the sampler
has handed out batch b + 1 by then is the rest re-formed there, from where it stands.
Batches already handed to the DataLoader (prefetched) keep their rows. The switch point
is a batch count, not a time, so the batches are the same on every run, with or without
a checkpoint between the refresh and the next step.

Under ``torch.distributed`` feature extraction is sharded across ranks and gathered
(see :mod:`psda.distributed`), so every rank hands byte-identical features to the
deterministic Go core and holds the identical matching.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Optional

import numpy as np

from .extract import extract_features
from .samplers.base import _check_effective

__all__ = [
    "extract_features",
    "refresh",
    "RefreshSchedule",
    "FeatureRefresher",
]

_log = logging.getLogger("psda")


def _extract_pair(model, source_dataset, target_dataset, distributed: Optional[bool], **kw):
    """Return (source_features, target_features), sharded across ranks when distributed."""
    from . import distributed as dist_mod

    if distributed is None:
        distributed = dist_mod.world()[0] > 1
    if distributed:
        src = dist_mod.gather_features(model, source_dataset, desc="psda source", **kw)
        tgt = dist_mod.gather_features(model, target_dataset, desc="psda target", **kw)
    else:
        src = extract_features(model, source_dataset, desc="psda source", **kw)
        tgt = extract_features(model, target_dataset, desc="psda target", **kw)
    return src, tgt


def refresh(
    sampler: Any,
    model: Callable[[Any], Any],
    source_dataset: Any,
    target_dataset: Any,
    *,
    distributed: Optional[bool] = None,
    effective: str = "epoch",
    **extract_kwargs: Any,
) -> tuple:
    """refresh extracts the features of both datasets with ``model`` and calls
    ``sampler.update(source_features, target_features, effective=effective)``; the new
    matching is used from the sampler's next epoch (``effective="epoch"``), or also for
    the rest of the running epoch from its next batch (``"batch"``). It returns the two
    feature arrays.

    ``distributed=None`` shards the extraction across ranks when ``torch.distributed``
    is initialised with more than one process (every rank must call refresh);
    ``extract_kwargs`` go to :func:`extract_features` (batch_size, device, num_workers,
    input_fn, collate_fn, progress). Errors are those of :func:`extract_features` and
    of ``sampler.update``.

    Cost: one forward pass over both datasets plus one matching.
    """
    _check_effective(effective)
    src, tgt = _extract_pair(model, source_dataset, target_dataset, distributed, **extract_kwargs)
    if effective == "epoch":
        sampler.update(src, tgt)  # any object with update(src, tgt)
    else:
        sampler.update(src, tgt, effective=effective)
    return src, tgt


class RefreshSchedule:
    """RefreshSchedule decides when the matching is refreshed: after every
    ``every_steps`` calls of :meth:`step` and/or every ``every_epochs`` calls of
    :meth:`epoch_end`. Both None means never.

    Example::

        schedule = RefreshSchedule(every_steps=500)
        for step in range(n_steps):
            ...
            if schedule.step():
                refresh(sampler, model.features, src_ds, tgt_ds)

    Raises ValueError for a non-positive interval. Its state (the counters) round-trips
    through :meth:`state_dict` / :meth:`load_state_dict`.
    """

    def __init__(self, *, every_steps: Optional[int] = None, every_epochs: Optional[int] = None):
        for name, v in (("every_steps", every_steps), ("every_epochs", every_epochs)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ValueError("%s must be None or an int >= 1, got %r" % (name, v))
        self.every_steps = every_steps
        self.every_epochs = every_epochs
        self.steps = 0
        self.epochs = 0

    def step(self) -> bool:
        """step counts one optimiser step and returns True when a refresh is due."""
        self.steps += 1
        return self.every_steps is not None and self.steps % self.every_steps == 0

    def epoch_end(self) -> bool:
        """epoch_end counts one finished epoch and returns True when a refresh is due."""
        self.epochs += 1
        return self.every_epochs is not None and self.epochs % self.every_epochs == 0

    def state_dict(self) -> dict:
        """state_dict returns the counters and intervals."""
        return {"steps": self.steps, "epochs": self.epochs,
                "every_steps": self.every_steps, "every_epochs": self.every_epochs}

    def load_state_dict(self, state: dict) -> None:
        """load_state_dict restores the counters saved by :meth:`state_dict`."""
        self.steps = int(state["steps"])
        self.epochs = int(state["epochs"])


class FeatureRefresher:
    """FeatureRefresher refreshes a PairedBatchSampler's matching from a model's
    features on a :class:`RefreshSchedule`.

    Call :meth:`step` after every optimiser step and :meth:`epoch_end` after every
    epoch (before iterating the DataLoader again). Feature extraction always runs in
    the calling thread (it uses the model, which training is about to change). The
    matching runs in the calling thread too, unless ``background=True``: then it runs in
    a daemon thread while training continues (the Go core releases the GIL) and is
    joined at the next :meth:`epoch_end` / :meth:`wait`, so the new pairing is used
    from the epoch after that join, identically on every run and rank, and never mixed
    into batches already queued. A refresh requested while one is still running first
    waits for it.

    Args:
        sampler: a ``psda.PairedBatchSampler`` (anything with ``update(src, tgt)``).
        model: the feature extractor (e.g. ``net.features``).
        source_dataset, target_dataset: the datasets the sampler indexes, in the same
            order as the features it was built from.
        every_steps, every_epochs: the schedule (see :class:`RefreshSchedule`); at
            least one is required unless ``manual``.
        manual: no schedule: only :meth:`refresh` refreshes (step() and epoch_end()
            still join a background matching). Without it, giving neither
            interval is a ValueError, since the refresher would silently never run.
        background: compute the matching in a thread.
        effective: ``"epoch"`` (default): a refresh is in force from the sampler's next
            epoch; ``"batch"``: also for the rest of the running epoch, re-grouped from
            the next batch (foreground) or the one after it (background: installed at
            the next :meth:`step`); see the module docstring. Needs a psda batch sampler
            (or a wrapper with ``.sampler``).
        distributed: shard extraction across ranks (None: when torch.distributed is
            initialised with more than one process).
        extract_kwargs: batch_size, device, num_workers, input_fn, collate_fn, progress
            for :func:`extract_features`.

    Example::

        refresher = FeatureRefresher(sampler, net.features, src_ds, tgt_ds,
                                     every_epochs=1, background=True)
        for epoch in range(epochs):
            for batch in loader:
                ...  # forward, loss, backward, optimiser step
                refresher.step()
            refresher.epoch_end()

    ``stalls`` records, per refresh, the seconds the training thread spent in it
    (extraction, plus the matching in foreground mode, plus any wait at the join).
    """

    def __init__(
        self,
        sampler: Any,
        model: Callable[[Any], Any],
        source_dataset: Any,
        target_dataset: Any,
        *,
        every_steps: Optional[int] = None,
        every_epochs: Optional[int] = None,
        manual: bool = False,
        background: bool = False,
        distributed: Optional[bool] = None,
        effective: str = "epoch",
        **extract_kwargs: Any,
    ):
        self.effective = _check_effective(effective)
        if every_steps is None and every_epochs is None and not manual:
            raise ValueError(
                "FeatureRefresher: every_steps and every_epochs are both None, so step() and epoch_end() would "
                "never refresh: pass every_epochs=1 (refresh after each epoch) or every_steps=N, or manual=True "
                "if you call refresher.refresh() yourself"
            )
        if manual and (every_steps is not None or every_epochs is not None):
            raise ValueError(
                "FeatureRefresher: manual=True with every_steps = %r, every_epochs = %r: manual means no schedule; "
                "pass either manual=True or a schedule" % (every_steps, every_epochs)
            )
        self.sampler = sampler
        self.model = model
        self.source_dataset = source_dataset
        self.target_dataset = target_dataset
        self.schedule = RefreshSchedule(every_steps=every_steps, every_epochs=every_epochs)
        self.background = bool(background)
        self.distributed = distributed
        self.extract_kwargs = extract_kwargs
        self.stalls: list = []
        self.refreshes = 0
        self._thread: Optional[threading.Thread] = None
        self._cancel = threading.Event()
        self._error: Optional[BaseException] = None
        self._restore_pending: Any = None
        # The psda sampler behind `sampler` (psda.distributed.WholeBatches wraps one): a
        # background refresh builds its plan in the thread and installs it at the join,
        # so that the epoch it starts in depends on the loop's counts, not on the thread.
        inner = getattr(sampler, "sampler", sampler)
        self._target = inner if hasattr(inner, "_prepare_rest") else None
        if self.effective == "batch" and self._target is None:
            raise ValueError(
                "FeatureRefresher: effective='batch' needs a psda batch sampler (psda.batch_sampler: it re-groups "
                "the rest of the running epoch), got %s: pass one, or effective='epoch'" % type(sampler).__name__)
        if self.effective == "batch" and not getattr(self._target, "regroups", True):
            raise ValueError(
                "FeatureRefresher: effective='batch' with a %r sampler, whose batches are independent draws from the "
                "whole domain: there is no rest of the epoch to re-group, so it would act as effective='epoch'; "
                "pass effective='epoch'" % self._target.name)
        self._at: Optional[int] = None  # the batch a background "batch" refresh expects to start at
        self._joined: Any = None  # (s, t, plan, prepared rest) from the thread, re-formed at the join

    def step(self) -> bool:
        """step joins a background ``effective="batch"`` refresh (installing the rest of
        the epoch it re-formed), counts one optimiser step and refreshes when the schedule
        says so; it returns True when a refresh was started."""
        if self._thread is not None and self.effective == "batch":
            self.wait()
        if self.schedule.step():
            self.refresh()
            return True
        return False

    def epoch_end(self) -> bool:
        """epoch_end joins a background matching (installing it for the next epoch),
        counts the epoch and refreshes when the schedule says so; it returns True when a
        refresh was started."""
        self.wait()
        self._reinstall_pending()
        if self.schedule.epoch_end():
            self.refresh()
            return True
        return False

    def _reinstall_pending(self) -> None:
        # A DataLoader with workers snapshots the sampler's state when it sends indices,
        # ahead of the training loop, so a checkpoint taken soon after a mid-epoch refresh
        # can hold a sampler state without the refreshed (pending) matching. The
        # refresher's own state keeps it; it is put back here, at the epoch boundary,
        # after the DataLoader has restored the sampler and before the next epoch starts.
        st, self._restore_pending = self._restore_pending, None
        if st is None or not hasattr(self.sampler, "state_dict"):
            return
        state = self.sampler.state_dict()
        if state.get("pending_plan") is None:
            state["pending_plan"] = st
            self.sampler.load_state_dict(state)

    def refresh(self) -> None:
        """refresh extracts features now and updates the sampler (in the background in
        background mode). Errors from a background matching are raised by the next
        :meth:`wait`."""
        t0 = time.perf_counter()
        self.wait()
        self._restore_pending = None  # superseded by this refresh
        src, tgt = _extract_pair(self.model, self.source_dataset, self.target_dataset,
                                 self.distributed, **self.extract_kwargs)
        if self.background:
            self._error = None
            self._cancel = threading.Event()
            if self.effective == "batch":
                # The join comes after one more step, which takes one more batch:
                # the thread prepares the rest from there (re-done at the join if
                # the sampler stands elsewhere then).
                b = self._target._position()
                self._at = None if b is None else b + 1
            self._thread = threading.Thread(target=self._run, args=(src, tgt),
                                            name="psda-refresh", daemon=True)
            self._thread.start()
        elif self.effective == "batch":
            self.sampler.update(src, tgt, effective="batch")
        else:
            self.sampler.update(src, tgt)
        self.refreshes += 1
        self.stalls.append(time.perf_counter() - t0)
        _log.info("psda: refresh %d started (%s), training stalled %.3fs", self.refreshes,
                  "background" if self.background else "foreground", self.stalls[-1])

    def _run(self, src: np.ndarray, tgt: np.ndarray) -> None:
        from . import _native

        try:
            with _native.cancel_when(self._cancel):
                if self._target is None:  # not a psda sampler: its update() installs when it ends
                    self.sampler.update(src, tgt)
                else:
                    s, t, plan = self._target._update_plan(src, tgt, install=False)
                    ready = None
                    if self.effective == "batch" and self._at is not None:
                        ready = self._target._prepare_rest(s, t, plan, at=self._at)
                    self._joined = (s, t, plan, ready)
        except KeyboardInterrupt:
            if not self._cancel.is_set():
                self._error = KeyboardInterrupt()
        except BaseException as e:  # re-raised in the training thread by wait()
            self._error = e

    def pending(self) -> bool:
        """pending reports whether a background matching is still running."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self) -> float:
        """wait joins a running background matching and returns the seconds spent
        waiting (0 when none is running); the stall is added to the last refresh's entry
        in ``stalls``. It re-raises an error the matching raised. Interrupted (Ctrl-C),
        it cancels the matching and waits for it to stop before re-raising: the
        refresh is dropped, :meth:`pending` is False and the sampler gets no update.
        With ``effective="batch"`` it then installs the rest of the running epoch the
        thread prepared (re-forming it here if the sampler has passed its first batch;
        the time counts as waiting)."""
        if self._thread is None:
            return 0.0
        t0 = time.perf_counter()
        thread = self._thread
        try:
            while thread.is_alive():
                thread.join(0.05)
        except BaseException:
            # Ctrl-C (or any exception) while waiting: cancel the Go work and
            # wait the milliseconds it takes to stop, so that nothing lands
            # in the sampler afterwards; this refresh is dropped (no pending
            # matching), as the refresher then reports.
            self._cancel.set()
            while thread.is_alive():
                try:
                    thread.join(0.05)
                except KeyboardInterrupt:
                    pass
            self._thread, self._error, self._joined = None, None, None
            raise
        self._thread = None
        joined, self._joined = self._joined, None
        err, self._error = self._error, None
        if err is None and joined is not None:
            # The plan is pending from here: the next epoch that starts after this join.
            self._target._install_plan(joined[2])
            if self.effective == "batch":
                # The rest of the epoch from the sampler's next batch, the one the thread
                # prepared if the sampler stands where it expected.
                self._target._reform(*joined[:3], prepared=joined[3], foreground=True)
        waited = time.perf_counter() - t0
        if self.stalls:
            self.stalls[-1] += waited
        if err is not None:
            raise err
        return waited

    def state_dict(self) -> dict:
        """state_dict joins a background matching and returns the schedule's counters
        and the refreshed plan not yet in force (the sampler's ``pending_plan``
        state, or None), and the running epoch's rows re-formed by an ``effective="batch"``
        refresh (the sampler's ``rest``, with its epoch, or None). Save it next to the
        DataLoader's or sampler's state."""
        self.wait()
        pending = rest = None
        if hasattr(self.sampler, "state_dict"):
            st = self.sampler.state_dict()
            pending = st.get("pending_plan")
            if st.get("rest") is not None:
                rest = {"epoch": st["epoch"], "rest": st["rest"]}
        return {"schedule": self.schedule.state_dict(), "refreshes": self.refreshes,
                "pending_plan": pending, "rest": rest}

    def load_state_dict(self, state: dict) -> None:
        """load_state_dict restores the counters saved by :meth:`state_dict`; a refreshed
        matching that was pending at the save is put back into the sampler at the next
        :meth:`epoch_end` if the sampler's restored state lacks it (a DataLoader with
        workers snapshots the sampler ahead of the training loop), so the next epoch
        uses it exactly as the uninterrupted run would. Likewise the rows an
        ``effective="batch"`` refresh re-formed: the sampler's next ``load_state_dict``
        (the DataLoader's, at its next ``iter``) adopts them if its state, of the same
        epoch, lacks them, so the rest of that epoch is the uninterrupted run's."""
        self.schedule.load_state_dict(state["schedule"])
        self.refreshes = int(state["refreshes"])
        rest = state.get("rest")
        target = getattr(self.sampler, "sampler", self.sampler)
        if rest is not None and hasattr(target, "_expect_rest"):
            target._expect_rest(rest["epoch"], rest["rest"])
        # "pending_matching": the key before every sampler shared one state format.
        self._restore_pending = state.get("pending_plan", state.get("pending_matching"))
