// Node positions for the policy canvas: a line for one ordered attribute, a
// grid for two, a circle for categorical values; the null vertex ⊥ (a node
// with `bottom: true`) sits above the others.

/**
 * @param {{id: string, bottom?: boolean, row?: number, col?: number}[]} nodes
 * @param {"line" | "grid" | "circle"} layout
 * @returns {Map<string, {x: number, y: number}>}
 */
export function layoutPositions(nodes, layout, width, height) {
  const cells = nodes.filter((n) => !n.bottom);
  const pos = new Map();
  const margin = 20;
  if (layout === "grid") {
    const rows = Math.max(1, ...cells.map((n) => (n.row ?? 0) + 1));
    const cols = Math.max(1, ...cells.map((n) => (n.col ?? 0) + 1));
    const step = Math.min((width - 2 * margin) / cols, (height - 2 * margin - 40) / rows);
    cells.forEach((n) => {
      pos.set(n.id, { x: margin + (n.col ?? 0) * step, y: 60 + (n.row ?? 0) * step });
    });
  } else if (layout === "circle") {
    const r = Math.min(width, height) / 2 - margin - 20;
    cells.forEach((n, i) => {
      const a = (2 * Math.PI * i) / cells.length - Math.PI / 2;
      pos.set(n.id, { x: width / 2 + r * Math.cos(a), y: height / 2 + 20 + r * Math.sin(a) });
    });
  } else {
    const step = cells.length > 1 ? (width - 2 * margin) / (cells.length - 1) : 0;
    cells.forEach((n, i) => pos.set(n.id, { x: margin + i * step, y: height - 30 }));
  }
  const xs = [...pos.values()].map((p) => p.x);
  const centre = xs.length ? (Math.min(...xs) + Math.max(...xs)) / 2 : width / 2;
  nodes.filter((n) => n.bottom).forEach((n) => pos.set(n.id, { x: centre, y: 10 }));
  return pos;
}
