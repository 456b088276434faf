// The policy-graph canvas: an anywidget front end that draws the policy graph
// the Python side describes and turns mouse gestures into edit requests. It
// holds no privacy logic: the synced traits (blowfish_nb/widgets/canvas.py)
// are read here, and edits are sent to Python as messages {op, ...}, which
// validates and applies them and sends the new graph back.
//
import cytoscape from "cytoscape";
import edgehandles from "cytoscape-edgehandles";

import { layoutPositions } from "./layout.js";

cytoscape.use(edgehandles);

// The synced traits this view reads or writes: exactly the Python
// PolicyCanvas traits (a test compares the two lists).
export const TRAITS = [
  "nodes", "edges", "arrangement", "height", "title", "mode", "message", "facts", "editable", "window", "history",
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
      width: 12,
      height: 12,
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
  { selector: "node:selected", style: { "background-color": "#dd8452", "border-width": 2, "border-color": "#333" } },
  { selector: "node.pending", style: { "background-color": "#55a868", width: 16, height: 16 } },
  {
    selector: "edge",
    style: {
      width: 1.2,
      "line-color": "#8c8c8c",
      opacity: 0.75,
      "curve-style": "unbundled-bezier",
      "control-point-distances": (ele) => ele.data("bend"),
      "control-point-weights": 0.5,
    },
  },
  { selector: "edge.to-bottom", style: { "line-color": "#e3a5a7", "curve-style": "straight", width: 0.8 } },
  { selector: ".eh-preview, .eh-ghost-edge", style: { "line-color": "#55a868", "curve-style": "straight", width: 2 } },
  { selector: ".eh-ghost-node", style: { opacity: 0 } },
];

/** Cytoscape elements for the current model state (nodes keep their order). */
function elementsFrom(model, width, height) {
  const nodes = model.get("nodes");
  const edges = model.get("edges");
  const pos = layoutPositions(nodes, model.get("arrangement"), width, height);
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  // Label at most ~12 cells on a line so that labels never overlap; ⊥ is always labelled.
  const stride = model.get("arrangement") === "line" ? Math.max(1, Math.ceil(nodes.length / 12)) : 1;
  const els = nodes.map((n, i) => ({
    group: "nodes",
    data: { id: n.id, label: n.label, show: n.bottom || i % stride === 0 || i === nodes.length - 1 },
    position: pos.get(n.id),
    classes: n.bottom ? "bottom" : "",
    locked: true,
  }));
  edges.forEach(([u, v], i) => {
    const toBottom = nodes[index.get(v)]?.bottom || nodes[index.get(u)]?.bottom;
    // Arcs above the line: the bend grows with the span so that threshold
    // edges of different lengths do not hide each other.
    const span = Math.abs(pos.get(u).x - pos.get(v).x);
    const onOneRow = Math.abs(pos.get(u).y - pos.get(v).y) < 1;
    els.push({
      group: "edges",
      data: { id: `e${i}`, source: u, target: v, bend: onOneRow ? -0.35 * span : 0 },
      classes: toBottom ? "to-bottom" : "",
    });
  });
  return els;
}

function button(label, cls, onClick) {
  const b = document.createElement("button");
  b.textContent = label;
  b.className = `blowfish-canvas-button ${cls}`;
  b.style.fontSize = "11px";
  b.style.marginRight = "3px";
  b.addEventListener("click", onClick);
  return b;
}

function factsText(f) {
  if (!f || f.edges === undefined) return "";
  const delta = f.sensitivity === null || f.sensitivity === undefined ? "∞" : String(+f.sensitivity.toPrecision(4));
  const shape = f.tree ? "a tree" : f.forest ? "a forest" : "has cycles";
  return `${f.edges.toLocaleString()} edges · ${f.components} component${f.components === 1 ? "" : "s"} · ` +
    `${shape}${f.bottom ? " · with ⊥" : ""} · sensitivity of the ${f.query}: Δ = ${delta}`;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "blowfish-canvas-widget";
  const caption = document.createElement("div");
  caption.className = "blowfish-canvas-title";
  caption.style.fontSize = "12px";
  caption.style.color = "#444";

  // toolbar: modes, θ preset, block / ⊥-all actions, undo/redo, zoom
  const bar = document.createElement("div");
  bar.className = "blowfish-canvas-toolbar";
  bar.style.margin = "2px 0";
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
  bar.appendChild(blockBtn);
  bar.appendChild(allBottomBtn);
  const theta = document.createElement("input");
  theta.type = "number";
  theta.min = "1";
  theta.value = "1";
  theta.className = "blowfish-canvas-theta";
  theta.style.width = "48px";
  bar.appendChild(theta);
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
  box.style.width = "100%";
  box.style.height = `${model.get("height")}px`;
  box.style.border = "1px solid #ddd";
  const facts = document.createElement("div");
  facts.className = "blowfish-canvas-facts";
  facts.style.fontSize = "12px";
  const message = document.createElement("div");
  message.className = "blowfish-canvas-message";
  message.style.fontSize = "12px";
  message.style.minHeight = "1.2em";

  root.append(caption, bar, box, facts, message);
  el.appendChild(root);

  let cy = null;
  let eh = null;
  let frame = 0;
  let pending = null; // first node of a click-click edge

  const applyMode = () => {
    const mode = model.get("mode");
    modeButtons.forEach((b) => { b.style.fontWeight = b.dataset.mode === mode ? "bold" : "normal"; });
    blockBtn.style.display = mode === "block" ? "" : "none";
    allBottomBtn.style.display = mode === "bottom" ? "" : "none";
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
      // Drag from node to node (edgehandles' draw mode): Python decides; the
      // preview edge is removed and the graph comes back from the kernel.
      eh = cy.edgehandles({
        canConnect: (s, t) => !s.same(t),
        edgeParams: () => ({ classes: "eh-drawn" }),
        snap: false,
        hoverDelay: 50,
      });
      cy.on("ehcomplete", (evt, source, target, added) => {
        added.remove();
        if (pending) pending.removeClass("pending");
        pending = null;
        model.send({ op: "add", source: source.id(), target: target.id() });
      });
      box.__cy = cy; // read by the browser tests to find where nodes are drawn
    } else {
      cy.batch(() => {
        cy.elements().remove();
        cy.add(elements);
      });
    }
    cy.resize();
    cy.fit(undefined, 16);
    caption.textContent = model.get("title");
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
    facts.textContent = factsText(model.get("facts"));
    const m = model.get("message") || "";
    message.textContent = m;
    message.style.color = m.startsWith("✗") ? "#b00020" : "#2d6a2d";
    const [u, r] = model.get("history") || [0, 0];
    undoBtn.disabled = !u;
    redoBtn.disabled = !r;
  };
  for (const name of ["nodes", "edges", "arrangement", "height", "title", "editable", "window"]) {
    model.on(`change:${name}`, () => {
      box.style.height = `${model.get("height")}px`;
      schedule();
    });
  }
  model.on("change:mode", applyMode);
  for (const name of ["facts", "message", "history"]) model.on(`change:${name}`, showText);
  showText();
  schedule();
  return () => {
    if (frame) cancelAnimationFrame(frame);
    if (eh) eh.destroy();
    if (cy) cy.destroy();
  };
}

export default { render };
