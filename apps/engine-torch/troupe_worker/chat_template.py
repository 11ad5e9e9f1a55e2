"""Chat templates rendered as transformers' `apply_chat_template` renders them (the reference the
controller's renderer is checked against; jinja2 only, no transformers):

- an ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks and the loopcontrols
  extension;
- a `tojson` filter that keeps non-ASCII text (ensure_ascii=False), the globals `raise_exception`
  and `strftime_now`;
- the variables: messages, tools, documents, add_generation_prompt, the tokenizer's special-token
  strings (bos_token, eos_token, ...), then the caller's template kwargs (enable_thinking, ...).

    python -m troupe_worker.chat_template < {"template", "messages", "add_generation_prompt", "special_tokens", "kwargs"}
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any, Optional


class TemplateError(ValueError):
    """raise_exception(...) in a template."""


def render_chat(template: str, messages: list[dict], add_generation_prompt: bool = True,
                special_tokens: Optional[dict[str, str]] = None, **kwargs: Any) -> str:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    compiled = env.from_string(template)
    try:
        return compiled.render(messages=messages, tools=None, documents=None, add_generation_prompt=add_generation_prompt,
                               **(special_tokens or {}), **kwargs)
    except jinja2.TemplateError as e:
        raise TemplateError(f"chat template: {e}") from None


def main() -> int:
    req = json.load(sys.stdin)
    sys.stdout.write(render_chat(req["template"], req["messages"], req.get("add_generation_prompt", True),
                                 req.get("special_tokens"), **req.get("kwargs", {})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
