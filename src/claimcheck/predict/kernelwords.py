"""Why a format's runs on one card do not stand for its kernel on another, in words (the
carried model's reason for leaving them out). Pure: kernel names and run counts in, words
out; the kernels and their architectures are :mod:`claimcheck.physics.formats`'s."""

from __future__ import annotations

from typing import Any

from claimcheck.physics.formats import KERNEL_ARCH, KERNEL_PATH


def _built_for(archs: Any) -> str:
    """("ampere", "ada") -> "Ampere and Ada"."""
    return " and ".join(a.capitalize() for a in archs)


def foreign_kernel(fmt: Any, arch: str | None, card: str, whose: str = "their"
                   ) -> str | None:
    """Why a run of ``fmt`` on a card of ``arch`` does not stand for the format's kernel
    (:data:`KERNEL_ARCH`), its words starting ``whose kernel``; None when it does, or when
    the format or the architecture has no kernel or architecture on record."""
    kernel = KERNEL_PATH.get(str(fmt))
    native = KERNEL_ARCH.get(kernel or "")
    if not native or arch is None or arch in native:
        return None
    return (f"{whose} kernel, {kernel.capitalize()}, was built for {_built_for(native)}, "
            f"and the {card} is {arch.capitalize()}")


def not_carried_words(groups: dict[str | None, list[str]], fmt: Any, arch: str,
                      local: str, card: str) -> str:
    """Why a format's local runs, grouped by kernel (:func:`run_kernel`), do not stand for
    that format's kernel on ``card``, a local card of ``arch`` (:data:`KERNEL_PATH`): one
    group, "their kernel, K, ..."; several, "N ran K, built for ... (the card is ...), M L
    (built for ...) and P Q, kernels other than the one ..." (the target's kernel first,
    then the most runs; no semicolon, as the assumptions are joined by them)."""
    target = KERNEL_PATH.get(str(fmt)) or ""

    def why(k: str | None, whose: str) -> str:
        if k == target:
            return foreign_kernel(fmt, arch, local, whose) or ""
        if k is None:
            return f"{whose} start logs name no kernel"
        built = KERNEL_ARCH.get(k)
        on = f", built for {_built_for(built)}," if built else ","
        return (f"{whose} kernel, {k.capitalize()}{on} is not the one {fmt} runs on the "
                f"{card} ({target.capitalize()})")
    if len(groups) == 1:
        k = next(iter(groups))
        return why(k, "its" if len(groups[k]) == 1 else "their")
    out = []
    if target in groups:
        out.append(f"{len(groups[target])} ran {target.capitalize()}" + (
            f", built for {_built_for(KERNEL_ARCH[target])} (the {local} is "
            f"{arch.capitalize()})" if foreign_kernel(fmt, arch, local) else ""))
    others = sorted((k for k in groups if k not in (target, None)),
                    key=lambda k: (-len(groups[k]), k))
    for k in others:
        built = KERNEL_ARCH.get(k)
        out.append(f"{len(groups[k])}{'' if out else ' ran'} {k.capitalize()}" + (
            f" (built for {_built_for(built)})" if built else ""))
    if others:
        out[-1] += (f", {'kernels other than' if len(others) > 1 else 'not'} the one {fmt} "
                    f"runs on the {card} ({target.capitalize()})")
    if None in groups:
        out.append(f"{len(groups[None])} whose start logs name no kernel")
    return ", ".join(out[:-1]) + " and " + out[-1]
