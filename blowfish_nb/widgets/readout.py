"""A line of HTML whose ``<details>`` stay as the user left them while its value changes (issue 28, item 6).

The explorer's readout leads with a plain sentence and keeps the details one
click away. An ipywidgets ``HTML`` replaces its whole content on every value,
so details the user opened snapped shut at every ε, θ or policy step.
:class:`Readout` draws the same HTML, and after each new value gives every
``<details>`` the open state the user left the one of the same class in
(one that was never toggled keeps what the HTML says). The state lives in the
browser only: the kernel sends the same strings as before.

The view reuses ipywidgets' HTML classes (``widget-html`` and its content
div), so it is laid out and styled as the ``HTML`` widget it replaces.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

__all__ = ["Readout"]

#: the view: the value as innerHTML; each <details> with a class keeps the open state its namesake had before
ESM = """
export default {
  render({ model, el }) {
    el.classList.add("widget-inline-hbox", "widget-html", "jupyter-widget-html");
    const content = document.createElement("div");
    content.classList.add("widget-html-content", "jupyter-widget-html-content");
    el.appendChild(content);
    const open = new Map();  // a <details>' class -> open, as the user last left it (kept across values without it)
    const draw = () => {
      for (const d of content.querySelectorAll("details[class]")) open.set(d.className, d.open);
      content.innerHTML = model.get("value");
      for (const d of content.querySelectorAll("details[class]")) {
        if (open.has(d.className)) d.open = open.get(d.className);
      }
    };
    draw();
    model.on("change:value", draw);
    return () => model.off("change:value", draw);
  },
};
"""


class Readout(anywidget.AnyWidget):
    """HTML text, like ``ipywidgets.HTML``, whose ``<details>`` keep their open state across new values.

    A ``<details>`` is matched to its predecessor by its ``class`` attribute:
    give each one a class that stays the same from value to value. A value
    without it (an error message) leaves the remembered state for the next
    value that has it again.

    Parameters
    ----------
    value : str
        The HTML shown.
    **kwargs
        Passed on to :class:`anywidget.AnyWidget` (``layout``, ...).

    Examples
    --------
    >>> r = Readout("<span>within ±3</span> <details class='more'><summary>details</summary>ε = 1</details>")
    >>> r = r.add_class("my-readout")  # classes go on the view's element, as for any widget
    >>> r.value = r.value.replace("ε = 1", "ε = 2")  # opened in the browser, the details stay open
    >>> "ε = 2" in r.get_state()["value"], r._dom_classes
    (True, ('my-readout',))
    """

    _esm = ESM

    value = traitlets.Unicode("", help="the HTML shown").tag(sync=True)

    def __init__(self, value: str = "", **kwargs: Any) -> None:
        super().__init__(value=value, **kwargs)
