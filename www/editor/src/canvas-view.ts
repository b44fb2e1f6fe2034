// The drawing surface: an SVG element showing one canvas document, with three tools —
// select (click a shape, drag it to move it), rectangle and circle (drag out a box, or click
// for a default size). It reports finished gestures to the editor; it never edits state itself.

import type { CanvasDocument, Shape, ShapeType } from "./model.js";

const SVG = "http://www.w3.org/2000/svg";
export const WIDTH = 800;
export const HEIGHT = 500;
const DEFAULT_W = 90;
const DEFAULT_H = 60;

export type Tool = "select" | ShapeType;

export interface Gestures {
  /** A new shape was drawn. */
  draw(shape: Shape): void;
  /** A shape was dragged to (x, y). */
  move(shapeId: string, x: number, y: number): void;
  /** The selection changed (null = none). */
  select(shapeId: string | null): void;
}

type Drag =
  | { kind: "draw"; type: ShapeType; x0: number; y0: number; x1: number; y1: number }
  | { kind: "move"; shapeId: string; dx: number; dy: number; x: number; y: number; moved: boolean };

export class CanvasView {
  tool: Tool = "rect";
  colour = "#3b82f6";
  selected: string | null = null;
  private drag: Drag | null = null;
  private document: CanvasDocument = { shapes: {}, assets: {}, runs: {} };

  constructor(readonly svg: SVGSVGElement, private readonly gestures: Gestures) {
    svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
    svg.addEventListener("pointerdown", (event) => this.down(event));
    svg.addEventListener("pointermove", (event) => this.moveTo(event));
    svg.addEventListener("pointerup", (event) => this.up(event));
    svg.addEventListener("pointercancel", () => {
      this.drag = null;
      this.paint();
    });
  }

  /** Shows `document` (the optimistic view of the current canvas). */
  show(document: CanvasDocument): void {
    this.document = document;
    if (this.selected !== null && !document.shapes[this.selected]) this.selected = null;
    this.paint();
  }

  private point(event: PointerEvent): { x: number; y: number } {
    const box = this.svg.getBoundingClientRect();
    const x = ((event.clientX - box.left) / box.width) * WIDTH;
    const y = ((event.clientY - box.top) / box.height) * HEIGHT;
    return { x: Math.round(Math.min(Math.max(x, 0), WIDTH)), y: Math.round(Math.min(Math.max(y, 0), HEIGHT)) };
  }

  private down(event: PointerEvent): void {
    if (event.button !== 0) return;
    const { x, y } = this.point(event);
    this.svg.setPointerCapture?.(event.pointerId);
    if (this.tool === "select") {
      const target = (event.target as Element).closest("[data-shape-id]");
      const shapeId = target?.getAttribute("data-shape-id") ?? null;
      this.selected = shapeId;
      this.gestures.select(shapeId);
      const shape = shapeId === null ? undefined : this.document.shapes[shapeId];
      if (shapeId !== null && shape) {
        this.drag = { kind: "move", shapeId, dx: x - shape.x, dy: y - shape.y, x: shape.x, y: shape.y, moved: false };
      }
    } else {
      this.drag = { kind: "draw", type: this.tool, x0: x, y0: y, x1: x, y1: y };
    }
    this.paint();
  }

  private moveTo(event: PointerEvent): void {
    if (!this.drag) return;
    const { x, y } = this.point(event);
    if (this.drag.kind === "draw") {
      this.drag.x1 = x;
      this.drag.y1 = y;
    } else {
      const nx = x - this.drag.dx;
      const ny = y - this.drag.dy;
      this.drag.moved ||= nx !== this.drag.x || ny !== this.drag.y;
      this.drag.x = nx;
      this.drag.y = ny;
    }
    this.paint();
  }

  private up(event: PointerEvent): void {
    this.moveTo(event);
    const drag = this.drag;
    this.drag = null;
    if (!drag) return;
    if (drag.kind === "draw") {
      let { x0, y0, x1, y1 } = drag;
      if (Math.abs(x1 - x0) < 6 && Math.abs(y1 - y0) < 6) {
        x1 = x0 + DEFAULT_W / 2;
        y1 = y0 + DEFAULT_H / 2;
        x0 -= DEFAULT_W / 2;
        y0 -= DEFAULT_H / 2;
      }
      this.gestures.draw({
        type: drag.type,
        x: Math.min(x0, x1),
        y: Math.min(y0, y1),
        w: Math.abs(x1 - x0),
        h: Math.abs(y1 - y0),
        colour: this.colour,
      });
    } else if (drag.moved) {
      this.gestures.move(drag.shapeId, drag.x, drag.y);
    }
    this.paint();
  }

  private element(shapeId: string, shape: Shape, preview: boolean): SVGElement {
    const el =
      shape.type === "circle" ? document.createElementNS(SVG, "ellipse") : document.createElementNS(SVG, "rect");
    if (shape.type === "circle") {
      el.setAttribute("cx", String(shape.x + shape.w / 2));
      el.setAttribute("cy", String(shape.y + shape.h / 2));
      el.setAttribute("rx", String(shape.w / 2));
      el.setAttribute("ry", String(shape.h / 2));
    } else {
      el.setAttribute("x", String(shape.x));
      el.setAttribute("y", String(shape.y));
      el.setAttribute("width", String(shape.w));
      el.setAttribute("height", String(shape.h));
      el.setAttribute("rx", "4");
    }
    el.setAttribute("fill", shape.colour);
    if (preview) {
      el.setAttribute("fill-opacity", "0.4");
    } else {
      el.setAttribute("data-shape-id", shapeId);
      el.classList.add("shape");
      if (shapeId === this.selected) el.classList.add("selected");
    }
    return el;
  }

  private paint(): void {
    const nodes: SVGElement[] = [];
    for (const [shapeId, shape] of Object.entries(this.document.shapes)) {
      let drawn = shape;
      if (this.drag?.kind === "move" && this.drag.shapeId === shapeId) {
        drawn = { ...shape, x: this.drag.x, y: this.drag.y };
      }
      nodes.push(this.element(shapeId, drawn, false));
    }
    if (this.drag?.kind === "draw") {
      const { x0, y0, x1, y1, type } = this.drag;
      const box = { type, x: Math.min(x0, x1), y: Math.min(y0, y1), w: Math.abs(x1 - x0), h: Math.abs(y1 - y0) };
      nodes.push(this.element("", { ...box, colour: this.colour }, true));
    }
    this.svg.replaceChildren(...nodes);
  }
}
