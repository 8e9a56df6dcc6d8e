import { html } from "hono/html";
import type { Html } from "./html.ts";

/**
 * Pictures drawn on the server as SVG: no script, no library, nothing from
 * elsewhere, and the strict CSP holds (colours are classes in console.css,
 * never a style attribute). Every bar has a <title> with its numbers; every
 * picture comes with the same numbers as a table one click away (figure()).
 */
export interface Series {
  key: string;
  label: string;
  /** A class console.css colours: "allow", "deny", "s0"…"s7". */
  tone: string;
}

export interface Bar {
  label: string;
  values: Record<string, number>;
}

const WIDTH = 720;
const HEIGHT = 160;
const LEFT = 60;
const BOTTOM = 22;
const TOP = 8;

/** A number short enough for an axis: 1234 → "1.2k". */
export function short(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e9) return `${(value / 1e9).toFixed(1)}G`;
  if (abs >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (abs >= 1e4) return `${Math.round(value / 1e3)}k`;
  if (abs >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  if (Number.isInteger(value)) return String(value);
  return abs >= 1 ? value.toFixed(2) : value.toPrecision(2);
}

/** Bars over time (or any ordered labels), each stacked by series. */
export function stackedBars(options: {
  name: string;
  series: Series[];
  bars: Bar[];
  /** How a value reads in a bar's title (and, unless `axis` says, on the axis). */
  format?: (value: number) => string;
  axis?: (value: number) => string;
}): Html {
  const { series, bars } = options;
  const format = options.format ?? short;
  const axis = options.axis ?? format;
  const total = (bar: Bar) => series.reduce((sum, s) => sum + (bar.values[s.key] ?? 0), 0);
  const max = Math.max(0, ...bars.map(total));
  const plotW = WIDTH - LEFT - 4;
  const plotH = HEIGHT - BOTTOM - TOP;
  const slot = plotW / Math.max(1, bars.length);
  const barW = Math.max(1, slot * 0.8);
  const y = (value: number) => (max > 0 ? (value / max) * plotH : 0);
  const labelEvery = Math.max(1, Math.ceil(bars.length / 8));
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${options.name}" data-chart="${options.name}">
<line class="axis" x1="${LEFT}" y1="${TOP + plotH}" x2="${WIDTH - 4}" y2="${TOP + plotH}"/>
<text class="tick" x="${LEFT - 6}" y="${TOP + 10}" text-anchor="end">${axis(max)}</text>
<text class="tick" x="${LEFT - 6}" y="${TOP + plotH}" text-anchor="end">0</text>
${bars.map((bar, index) => {
  const x = LEFT + index * slot + (slot - barW) / 2;
  let base = TOP + plotH;
  const parts = series
    .filter((s) => (bar.values[s.key] ?? 0) > 0)
    .map((s) => {
      const value = bar.values[s.key] ?? 0;
      const h = y(value);
      base -= h;
      return html`<rect class="${s.tone}" x="${x.toFixed(1)}" y="${base.toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(h, 0.5).toFixed(1)}"><title>${bar.label} · ${s.label}: ${format(value)}</title></rect>`;
    });
  // every few bars and the last, never two so close they overlap
  const last = index === bars.length - 1;
  const label =
    last || (index % labelEvery === 0 && bars.length - 1 - index >= labelEvery)
      ? html`<text class="tick" x="${(x + barW / 2).toFixed(1)}" y="${HEIGHT - 6}" text-anchor="middle">${tickLabel(bar.label)}</text>`
      : "";
  return html`${parts}${label}`;
})}
</svg>${legend(series)}`;
}

/** One horizontal bar per label, split by series (hosts by allowed and refused). */
export function rowBars(options: {
  name: string;
  series: Series[];
  rows: Bar[];
  format?: (value: number) => string;
}): Html {
  const { series, rows } = options;
  const format = options.format ?? short;
  const rowH = 20;
  const labelW = 220;
  const plotW = WIDTH - labelW - 60;
  const total = (row: Bar) => series.reduce((sum, s) => sum + (row.values[s.key] ?? 0), 0);
  const max = Math.max(0, ...rows.map(total));
  const height = Math.max(rowH, rows.length * rowH) + 4;
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${options.name}" data-chart="${options.name}">
${rows.map((row, index) => {
  const top = index * rowH + 2;
  let left = labelW;
  const parts = series
    .filter((s) => (row.values[s.key] ?? 0) > 0)
    .map((s) => {
      const value = row.values[s.key] ?? 0;
      const w = max > 0 ? (value / max) * plotW : 0;
      const at = left;
      left += w;
      return html`<rect class="${s.tone}" x="${at.toFixed(1)}" y="${top}" width="${Math.max(w, 0.5).toFixed(1)}" height="${rowH - 6}"><title>${row.label} · ${s.label}: ${format(value)}</title></rect>`;
    });
  return html`<text class="tick" x="${labelW - 6}" y="${top + 11}" text-anchor="end">${clip(row.label, 34)}</text>${parts}<text class="tick" x="${(left + 4).toFixed(1)}" y="${top + 11}">${format(total(row))}</text>`;
})}
</svg>${legend(series)}`;
}

/** A picture, and its numbers as a table one click away. */
export function figure(options: {
  id: string;
  title: string;
  picture: Html;
  head: string[];
  rows: Array<Array<string | number>>;
}): Html {
  return html`<figure class="picture" id="${options.id}">
<figcaption>${options.title}</figcaption>
${options.picture}
<details class="numbers"><summary>Numbers</summary>
<table data-numbers="${options.id}"><thead><tr>${options.head.map((cell) => html`<th>${cell}</th>`)}</tr></thead><tbody>
${options.rows.map((row) => html`<tr>${row.map((cell) => html`<td>${cell}</td>`)}</tr>`)}
</tbody></table></details>
</figure>`;
}

function legend(series: Series[]): Html {
  return html`<p class="legend">${series.map((s) => html`<span class="key ${s.tone}"></span>${s.label} `)}</p>`;
}

/** "2026-12-02" → "12-02"; "2026-12-02T10" → "10h"; anything else as it is. */
function tickLabel(label: string): string {
  if (/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(label)) return `${label.slice(11, 13)}h`;
  if (/^\d{4}-\d{2}-\d{2}$/.test(label)) return label.slice(5);
  return clip(label, 10);
}

const clip = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max - 1)}…` : text;
