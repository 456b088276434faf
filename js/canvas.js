// The policy-graph canvas: an anywidget front end that draws the policy graph
// the Python side describes and turns mouse gestures into edit requests. It
// holds no privacy logic: the synced traits (blowfish_nb/widgets/canvas.py)
// are read here, and edits are sent to Python as messages {op, ...}, which
// validates and applies them and sends the new graph back. Its look is in
// blowfish_nb/widgets/canvas.css (anywidget's _css); this file sets no
// inline style but the container's height.
//
// Clicks land where they point: cytoscape caches its container's page
// position and re-reads it only on resize, scroll and window events, so a
// widget above (or a line of text) that changes height moves the graph under
// a stale cache. Every pointer gesture first calls cy.resize(), which drops
// the cache (renderer notify('resize') → invalidateContainerClientCoordsCache),
// and a ResizeObserver re-lays the graph out when the container's width changes.
//
import cytoscape from "cytoscape";
import edgehandles from "cytoscape-edgehandles";

import { layoutPositions } from "./layout.js";

cytoscape.use(edgehandles);

// The synced traits this view reads or writes: exactly the Python
// PolicyCanvas traits (a test compares the two lists).
export const TRAITS = [
  "nodes", "edges", "arrangement", "height", "title", "mode", "message", "facts", "editable", "window", "history",
  "theta",
];
// The edit requests this view sends: exactly PolicyCanvas's EDIT_OPS (tested).
export const OPS = ["add", "remove", "block", "bottom", "theta", "undo", "redo", "zoom"];

const MODES = [
  ["view", "view"],
  ["add", "add edge"],
  ["remove", "remove edge"],
  ["block", "paint block"],
  ["bottom", "toggle ⊥"],
];

const STYLE = [
  {
    selector: "node",
    style: {
      "background-color": "#4c72b0",
      label: (ele) => (ele.data("show") ? ele.data("label") : ""),
      "font-size": 9,
      "text-valign": "bottom",
      "text-margin-y": 3,
      color: "#333",
      width: "data(size)",
      height: "data(size)",
    },
  },
  {
    selector: "node.bottom",
    style: {
      "background-color": "#c44e52",
      shape: "diamond",
      width: 18,
      height: 18,
      "font-size": 12,
      "text-valign": "top",
      "text-margin-y": -3,
    },
  },
  { selector: "node.label-left", style: { "text-valign": "center", "text-halign": "left", "text-margin-x": -4 } },
  { selector: "node:selected", style: { "background-color": "#dd8452", "border-width": 2, "border-color": "#333" } },
  { selector: "node.pending", style: { "background-color": "#55a868", "border-width": 2, "border-color": "#2d6a2d" } },
  // the node a drag would join (edgehandles' target) and the node it started from
  {
    selector: "node.eh-target, node.eh-presumptive-target.eh-preview",
    style: { "background-color": "#55a868", "border-width": 3, "border-color": "#1b4d1b" },
  },
  { selector: "node.eh-source", style: { "background-color": "#55a868" } },
  {
    selector: "edge",
    style: {
      width: 1.2,
      "line-color": (ele) => SPAN_COLORS[(ele.data("span") - 1) % SPAN_COLORS.length] ?? "#8c8c8c",
      opacity: 0.75,
      "curve-style": "unbundled-bezier",
      "control-point-distances": (ele) => ele.data("bend"),
      "control-point-weights": 0.5,
    },
  },
  { selector: "edge.to-bottom", style: { "line-color": "#e3a5a7", "curve-style": "straight", width: 0.8 } },
  // the edge under the pointer in remove mode: the one a click removes
  { selector: "edge.hover", style: { width: 3.5, "line-color": "#c44e52", opacity: 1, "z-index": 10 } },
  { selector: ".eh-preview, .eh-ghost-edge", style: { "line-color": "#55a868", "curve-style": "straight", width: 2 } },
  { selector: ".eh-ghost-node", style: { opacity: 0 } },
];

// Arcs coloured by their span (in cells along the line), cycling: a threshold graph's arcs of different
// lengths stay apart by colour where they cross, instead of one grey band.
const SPAN_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974"];

/** Node size (px) for a spacing between neighbouring nodes: as large as leaves a gap, between 10 and 24 px. */
export function nodeSize(step) {
  return Math.max(10, Math.min(24, Math.floor(0.75 * step)));
}

/** Cytoscape elements for the current model state (nodes keep their order). */
function elementsFrom(model, width, height) {
  const nodes = model.get("nodes");
  const edges = model.get("edges");
  const arrangement = model.get("arrangement");
  const pos = layoutPositions(nodes, arrangement, width, height);
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  const labels = labelsFor(nodes, arrangement, pos);
  const size = nodeSize(nearestStep(nodes, pos));
  const els = nodes.map((n) => ({
    group: "nodes",
    data: { id: n.id, label: labels.get(n.id)?.text ?? "", show: labels.has(n.id), size: n.bottom ? 18 : size },
    position: pos.get(n.id),
    classes: [n.bottom ? "bottom" : "", labels.get(n.id)?.left ? "label-left" : ""].join(" ").trim(),
    locked: true,
  }));
  edges.forEach(([u, v], i) => {
    const toBottom = nodes[index.get(v)]?.bottom || nodes[index.get(u)]?.bottom;
    // Arcs above the line: the bend grows with the span so that threshold
    // edges of different lengths do not hide each other.
    const span = Math.abs(pos.get(u).x - pos.get(v).x);
    const onOneRow = Math.abs(pos.get(u).y - pos.get(v).y) < 1;
    const cells = Math.abs((index.get(u) ?? 0) - (index.get(v) ?? 0));
    els.push({
      group: "edges",
      data: { id: `e${i}`, source: u, target: v, bend: onOneRow ? -0.35 * span : 0, span: Math.max(1, cells) },
      classes: toBottom ? "to-bottom" : "",
    });
  });
  return els;
}

/** The distance between the two closest cells as drawn (the line's or the grid's step). */
function nearestStep(nodes, pos) {
  const cells = nodes.filter((n) => !n.bottom);
  if (cells.length < 2) return 40;
  const xs = [...new Set(cells.map((n) => Math.round(pos.get(n.id).x * 100) / 100))].sort((a, b) => a - b);
  const ys = [...new Set(cells.map((n) => Math.round(pos.get(n.id).y * 100) / 100))].sort((a, b) => a - b);
  let step = Infinity;
  for (const v of [xs, ys]) for (let i = 1; i < v.length; i++) step = Math.min(step, v[i] - v[i - 1]);
  return Number.isFinite(step) ? step : 40;
}

// Label width at the node font (9px): about 5.4px a character, plus a gap.
const labelWidth = (text) => 5.4 * String(text).length + 10;

/**
 * Which nodes are labelled, and with what, so that no two labels overlap: ⊥
 * always; on a line every stride-th cell, the stride set by the widest label;
 * on a grid every cell when the labels fit between nodes, else the rows'
 * ranges left of the first column and the columns' ranges under the last row.
 */
function labelsFor(nodes, arrangement, pos) {
  const out = new Map();
  const cells = nodes.filter((n) => !n.bottom);
  nodes.filter((n) => n.bottom).forEach((n) => out.set(n.id, { text: n.label }));
  if (!cells.length) return out;
  const widest = Math.max(...cells.map((n) => labelWidth(n.label)));
  if (arrangement === "line") {
    const step = cells.length > 1 ? Math.abs(pos.get(cells[1].id).x - pos.get(cells[0].id).x) : Infinity;
    const stride = Math.max(1, Math.ceil(widest / Math.max(step, 1e-9)));
    const last = cells.length - 1;
    cells.forEach((n, i) => {
      const lastFits = i === last && (last % stride) * step >= widest;
      if (i % stride === 0 || lastFits) out.set(n.id, { text: n.label });
    });
  } else if (arrangement === "grid") {
    const rows = Math.max(...cells.map((n) => n.row ?? 0));
    const xs = [...new Set(cells.map((n) => pos.get(n.id).x))].sort((a, b) => a - b);
    const step = xs.length > 1 ? xs[1] - xs[0] : Infinity;
    if (widest <= step || cells.some((n) => n.row_label === undefined)) {
      cells.forEach((n) => out.set(n.id, { text: n.label }));
    } else {
      const colStride = Math.max(1, Math.ceil(Math.max(...cells.map((n) => labelWidth(n.col_label))) / step));
      cells.forEach((n) => {
        const text = [];
        if ((n.row ?? 0) === rows && (n.col ?? 0) % colStride === 0) text.push(n.col_label);
        if ((n.col ?? 0) === 0) out.set(n.id, { text: n.row_label + (text.length ? ` / ${text[0]}` : ""), left: true });
        else if (text.length) out.set(n.id, { text: text[0] });
      });
    }
  } else {
    cells.forEach((n) => out.set(n.id, { text: n.label }));
  }
  return out;
}

/** The node drawn at a model position (within its radius plus a few px), or null. */
function nodeAt(cy, p) {
  if (!p) return null;
  let best = null;
  let bestD = Infinity;
  cy.nodes().forEach((n) => {
    if (n.hasClass("eh-ghost") || n.hasClass("eh-ghost-node")) return; // edgehandles' pointer-following node
    const q = n.position();
    const r = n.width() / 2 + 4 / Math.max(cy.zoom(), 1e-9);
    const d = Math.hypot(q.x - p.x, q.y - p.y);
    if (d <= r && d < bestD) {
      best = n;
      bestD = d;
    }
  });
  return best;
}

function button(label, cls, onClick) {
  const b = document.createElement("button");
  b.textContent = label;
  b.className = `blowfish-canvas-button ${cls}`;
  b.addEventListener("click", onClick);
  return b;
}

function factsText(f) {
  if (!f || f.edges === undefined) return "";
  const delta = f.sensitivity === null || f.sensitivity === undefined ? "∞" : String(+f.sensitivity.toPrecision(4));
  const shape = f.tree ? "a tree" : f.forest ? "a forest" : "has cycles";
  return `${f.edges.toLocaleString()} edges · ${f.components} component${f.components === 1 ? "" : "s"} · ` +
    `${shape}${f.bottom ? " · with ⊥" : ""} · Δ = ${delta} (sensitivity of the ${f.query} itself under this policy)`;
}

const FACTS_HELP = "Δ here is the query's own sensitivity: how far one record moving along one edge of this graph " +
  "can move the exact answers. A mechanism answers through a strategy whose Δ may differ (the explorer shows that one).";

/** Set a one-line text and keep the full text in the tooltip (the line never wraps; long text ends in …). */
function setLine(node, text) {
  node.textContent = text;
  node.title = text;
}

// Keys a focused ipywidgets slider handle (noUiSlider) answers.
export const SLIDER_KEYS = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End"];

// Notebook 7 starts its app without bubblingKeydown, so Lumino reads every
// keydown on `document` in the capture phase, before the slider does: ArrowLeft
// on a focused θ or ε handle ran notebook:move-cursor-heading-above-or-collapse
// and never reached the slider (JupyterLab reads keydowns on the way back up,
// after the slider has handled them). Lumino skips an event whose default is
// already prevented, and noUiSlider does not look, so one listener on `window`
// (whose capture phase comes before the document's) prevents the default of a
// slider key aimed at a handle inside one of our widgets: the notebook ignores
// it and the slider moves, as in JupyterLab. Nothing in ipywidgets' DOM is
// changed; keys with a modifier, and every other element, keep their shortcuts.
export function keepSliderKeys(win) {
  if (!win || win.__blowfishSliderKeys) return;
  win.__blowfishSliderKeys = true;
  win.addEventListener(
    "keydown",
    (event) => {
      const t = event.target;
      if (
        SLIDER_KEYS.includes(event.key) && !event.ctrlKey && !event.metaKey && !event.altKey &&
        t && t.classList && t.classList.contains("noUi-handle") && t.closest && t.closest(".blowfish-explorer")
      ) {
        event.preventDefault();
      }
    },
    true,
  );
}

function render({ model, el }) {
  keepSliderKeys(typeof window === "undefined" ? null : window);
  const root = document.createElement("div");
  root.className = "blowfish-canvas-widget";
  const caption = document.createElement("div");
  caption.className = "blowfish-canvas-title";

  // toolbar: modes, θ preset, block / ⊥-all actions, undo/redo, zoom
  const bar = document.createElement("div");
  bar.className = "blowfish-canvas-toolbar";
  const modeButtons = MODES.map(([mode, label]) => {
    const b = button(label, `mode-${mode}`, () => {
      model.set("mode", mode);
      model.save_changes();
    });
    b.dataset.mode = mode;
    return b;
  });
  modeButtons.forEach((b) => bar.appendChild(b));
  const blockBtn = button("make block", "make-block", () => {
    const ids = cy ? cy.nodes(":selected").map((n) => n.id()) : [];
    model.send({ op: "block", nodes: ids });
  });
  const allBottomBtn = button("⊥ all in view", "bottom-all", () => {
    const ids = cy ? cy.nodes().filter((n) => !n.hasClass("bottom")).map((n) => n.id()) : [];
    model.send({ op: "bottom", nodes: ids });
  });
  // one slot for the two mode actions (one shown at a time): the toolbar keeps its layout when the mode changes
  const actions = document.createElement("span");
  actions.className = "blowfish-canvas-mode-actions";
  actions.append(blockBtn, allBottomBtn);
  bar.appendChild(actions);
  const thetaLabel = document.createElement("label");
  thetaLabel.className = "blowfish-canvas-theta-label";
  thetaLabel.textContent = "θ (bins) ";
  const theta = document.createElement("input");
  theta.type = "number";
  theta.min = "1";
  theta.value = String(model.get("theta") ?? 1);
  theta.className = "blowfish-canvas-theta";
  theta.title = "θ in bins: the preset joins every pair of cells at most θ bins apart";
  thetaLabel.appendChild(theta);
  bar.appendChild(thetaLabel);
  bar.appendChild(button("apply θ", "apply-theta", () => model.send({ op: "theta", theta: parseInt(theta.value, 10) })));
  const undoBtn = button("undo", "undo", () => model.send({ op: "undo" }));
  const redoBtn = button("redo", "redo", () => model.send({ op: "redo" }));
  bar.appendChild(undoBtn);
  bar.appendChild(redoBtn);
  const zoomTo = (start, stop) => model.send({ op: "zoom", start: Math.round(start), stop: Math.round(stop) });
  const win = () => model.get("window") || [0, 0];
  bar.appendChild(button("zoom +", "zoom-in", () => {
    const [a, b] = win();
    const w = Math.max(1, Math.floor((b - a) / 4));
    zoomTo((a + b) / 2 - w, (a + b) / 2 + w);
  }));
  bar.appendChild(button("zoom −", "zoom-out", () => {
    const [a, b] = win();
    zoomTo(a - (b - a) / 2, b + (b - a) / 2);
  }));
  bar.appendChild(button("◀", "pan-left", () => { const [a, b] = win(); zoomTo(a - (b - a) / 2, b - (b - a) / 2); }));
  bar.appendChild(button("▶", "pan-right", () => { const [a, b] = win(); zoomTo(a + (b - a) / 2, b + (b - a) / 2); }));

  const box = document.createElement("div");
  box.className = "blowfish-canvas";
  const setHeight = () => root.style.setProperty("--blowfish-canvas-height", `${model.get("height")}px`);
  setHeight();
  const facts = document.createElement("div");
  facts.className = "blowfish-canvas-facts";
  const message = document.createElement("div");
  message.className = "blowfish-canvas-message";

  root.append(caption, bar, box, facts, message);
  el.appendChild(root);

  let cy = null;
  let eh = null;
  let frame = 0;
  let pending = null; // first node of a click-click edge
  let drawnWidth = 0; // the container width of the last layout
  let drawnKey = ""; // the nodes, arrangement and size last drawn: when unchanged only the edges are replaced

  const applyMode = () => {
    const mode = model.get("mode");
    modeButtons.forEach((b) => b.classList.toggle("is-active", b.dataset.mode === mode));
    blockBtn.classList.toggle("is-hidden", mode !== "block");
    allBottomBtn.classList.toggle("is-hidden", mode !== "bottom");
    root.dataset.mode = mode;
    if (!cy) return;
    if (pending) pending.removeClass("pending");
    pending = null;
    cy.nodes().unselect();
    cy.boxSelectionEnabled(mode === "block");
    cy.userPanningEnabled(mode !== "block");
    cy.autounselectify(mode !== "block");
    if (eh) {
      if (mode === "add" && model.get("editable")) eh.enableDrawMode();
      else eh.disableDrawMode();
    }
  };

  const onTapNode = (evt) => {
    const mode = model.get("mode");
    const node = evt.target;
    if (mode === "add") {
      if (pending === null) {
        pending = node;
        node.addClass("pending");
      } else {
        const source = pending.id();
        pending.removeClass("pending");
        pending = null;
        model.send({ op: "add", source, target: node.id() });
      }
    } else if (mode === "bottom" && !node.hasClass("bottom")) {
      model.send({ op: "bottom", nodes: [node.id()] });
    }
  };
  // A message of the canvas itself (no kernel round trip), until the kernel's next one replaces it.
  const localMessage = (text) => {
    setLine(message, text);
    message.classList.toggle("is-error", text.startsWith("✗"));
  };
  const onTapEdge = (evt) => {
    if (model.get("mode") !== "remove") return;
    const e = evt.target;
    model.send({ op: "remove", source: e.source().id(), target: e.target().id() });
  };

  const draw = () => {
    frame = 0;
    const width = box.clientWidth || 800;
    const height = box.clientHeight || model.get("height");
    const elements = elementsFrom(model, width, height);
    const key = JSON.stringify([model.get("nodes"), model.get("arrangement"), width, height]);
    if (cy === null) {
      cy = cytoscape({
        container: box,
        elements,
        style: STYLE,
        layout: { name: "preset" },
        autoungrabify: true,
        boxSelectionEnabled: false,
        wheelSensitivity: 0.2,
      });
      cy.on("tap", "node", onTapNode);
      cy.on("tap", "edge", onTapEdge);
      cy.on("mouseover", "edge", (evt) => { if (model.get("mode") === "remove") evt.target.addClass("hover"); });
      cy.on("mouseout", "edge", (evt) => evt.target.removeClass("hover"));
      // Drag from node to node (edgehandles' draw mode): Python decides; the
      // preview edge is removed and the graph comes back from the kernel.
      // hoverDelay 0: the node under the pointer is the target at once (a drag released on arrival adds its
      // edge; with a delay it was dropped silently). A release edgehandles still calls a cancel (no hover event
      // reached the node) is settled here by where it happened: on a node, the edge; elsewhere, a message.
      eh = cy.edgehandles({
        canConnect: (s, t) => !s.same(t),
        edgeParams: () => ({ classes: "eh-drawn" }),
        snap: false,
        hoverDelay: 0,
      });
      const addByDrag = (source, target) => {
        if (pending) pending.removeClass("pending");
        pending = null;
        model.send({ op: "add", source: source.id(), target: target.id() });
      };
      cy.on("ehcomplete", (evt, source, target, added) => {
        added.remove();
        addByDrag(source, target);
      });
      // where this gesture's pointer last was (edgehandles' own position outlives its gesture: a click on a node
      // must not be read as a drag to where the previous drag ended)
      let dragAt = null;
      cy.on("ehstart", () => { dragAt = null; });
      cy.on("tapdrag", (evt) => { dragAt = evt.position; });
      cy.on("ehcancel", (evt, source) => {
        if (dragAt === null) return; // a click: the click-click path (onTapNode) handles it
        const target = nodeAt(cy, dragAt);
        dragAt = null;
        if (target && !target.same(source)) addByDrag(source, target);
        else if (!target) localMessage("✗ release on a node to add an edge (the drag ended between nodes)");
      });
      box.__cy = cy; // read by the browser tests to find where nodes are drawn
    } else if (key === drawnKey) {
      // the same cells at the same size (a θ step, an edit): swap the edges only, keep the nodes
      cy.batch(() => {
        cy.edges().remove();
        cy.add(elements.filter((e) => e.group === "edges"));
      });
    } else {
      cy.batch(() => {
        cy.elements().remove();
        cy.add(elements);
      });
    }
    cy.resize();
    cy.fit(undefined, 16); // every time: a new long arc may reach above the nodes' box
    drawnKey = key;
    drawnWidth = width;
    setLine(caption, model.get("title"));
    applyMode();
    box.dataset.nodes = String(cy.nodes().length);
    box.dataset.edges = String(cy.edges().length);
    box.dataset.ready = "1";
  };
  // cytoscape needs a sized container: draw on the next frame, once per burst
  // of trait changes.
  const schedule = () => {
    box.dataset.ready = "0";
    if (!frame) frame = requestAnimationFrame(draw);
  };
  const showText = () => {
    setLine(facts, factsText(model.get("facts")));
    facts.title = `${facts.textContent}\n${FACTS_HELP}`;
    const m = model.get("message") || "";
    setLine(message, m);
    message.classList.toggle("is-error", m.startsWith("✗"));
    const [u, r] = model.get("history") || [0, 0];
    undoBtn.disabled = !u;
    redoBtn.disabled = !r;
  };
  for (const name of ["nodes", "edges", "arrangement", "height", "title", "editable", "window"]) {
    model.on(`change:${name}`, () => {
      setHeight();
      schedule();
    });
  }
  model.on("change:mode", applyMode);
  for (const name of ["facts", "message", "history"]) model.on(`change:${name}`, showText);
  model.on("change:theta", () => { theta.value = String(model.get("theta")); });

  // Re-read the container's page position before cytoscape sees a gesture
  // (capture phase: before its own mousedown/pointerdown/wheel handlers).
  const refreshPosition = () => { if (cy) cy.resize(); };
  for (const type of ["pointerdown", "mousedown", "touchstart", "wheel"]) {
    root.addEventListener(type, refreshPosition, { capture: true, passive: true });
  }
  // A narrower (or wider) container: lay the graph out again at the new width and fit it.
  const resizeObserver = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => {
    if (cy && Math.abs((box.clientWidth || 0) - drawnWidth) > 1) schedule();
    else refreshPosition();
  });
  if (resizeObserver) {
    resizeObserver.observe(box);
    resizeObserver.observe(root);
  }
  showText();
  schedule();
  return () => {
    if (resizeObserver) resizeObserver.disconnect();
    for (const type of ["pointerdown", "mousedown", "touchstart", "wheel"]) {
      root.removeEventListener(type, refreshPosition, { capture: true });
    }
    if (frame) cancelAnimationFrame(frame);
    if (eh) eh.destroy();
    if (cy) cy.destroy();
  };
}

export default { render };
