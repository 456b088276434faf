// The policy-graph canvas: an anywidget front end that draws the policy graph
// the Python side describes. It holds no privacy logic: the synced traits
// (see blowfish_nb/widgets/canvas.py) are read here, never computed.
//
import cytoscape from "cytoscape";

import { layoutPositions } from "./layout.js";

// The synced traits this view reads: exactly the Python PolicyCanvas traits
// (a test compares the two lists).
export const TRAITS = ["nodes", "edges", "arrangement", "height", "title"];

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
  {
    selector: "edge.to-bottom",
    style: { "line-color": "#e3a5a7", "curve-style": "straight", width: 0.8 },
  },
];

/** Cytoscape elements for the current model state (nodes keep their order). */
function elementsFrom(model, width, height) {
  const nodes = model.get("nodes");
  const edges = model.get("edges");
  const pos = layoutPositions(nodes, model.get("arrangement"), width, height);
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  // Label at most ~12 cells so that labels never overlap; ⊥ is always labelled.
  const stride = Math.max(1, Math.ceil(nodes.length / 12));
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

function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "blowfish-canvas";
  box.style.width = "100%";
  box.style.height = `${model.get("height")}px`;
  box.style.border = "1px solid #ddd";
  const caption = document.createElement("div");
  caption.className = "blowfish-canvas-title";
  caption.style.fontSize = "12px";
  caption.style.color = "#444";
  el.appendChild(caption);
  el.appendChild(box);

  let cy = null;
  let frame = 0;
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
    } else {
      cy.batch(() => {
        cy.elements().remove();
        cy.add(elements);
      });
    }
    cy.resize();
    cy.fit(undefined, 16);
    caption.textContent = model.get("title");
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
  for (const name of TRAITS) {
    model.on(`change:${name}`, () => {
      box.style.height = `${model.get("height")}px`;
      schedule();
    });
  }
  schedule();
  return () => {
    if (frame) cancelAnimationFrame(frame);
    if (cy) cy.destroy();
  };
}

export default { render };
