import { html } from "hono/html";
import { type Bar, figure, rowBars, type Series, stackedBars } from "../charts.ts";
import type { DoorWindow } from "../door-summary.ts";
import type { Html } from "../html.ts";
import type { RunFact } from "../run-index.ts";
import type { SpendDay } from "../spend-summary.ts";

/**
 * The overview's pictures: spend per worker per day (tokens and USD), the
 * door's traffic per hour and per host (allowed against refused), and runs
 * per day by outcome with their durations. Each is drawn from the same
 * numbers its table shows.
 */
const DAY_MS = 86_400_000;

const tones = (names: string[]): Series[] =>
  names.map((name, index) => ({ key: name, label: name, tone: `s${index % 8}` }));

const usd = (value: number) => `$${value.toFixed(4)}`;

export function spendPictures(days: SpendDay[], workers: string[]): Html {
  const seen = new Set(days.flatMap((day) => Object.keys(day.workers)));
  // workers the config no longer has still spent: they stay in the picture
  const names = [...new Set([...workers, ...seen])].filter((name) => seen.has(name));
  const series = tones(names);
  const of = (currency: string): Bar[] =>
    days.map((day) => ({
      label: day.day,
      values: Object.fromEntries(
        names.map((name) => [name, day.workers[name]?.[currency] ?? 0] as const),
      ),
    }));
  const rows = days.flatMap((day) =>
    names
      .filter((name) => day.workers[name])
      .map((name) => [
        day.day,
        name,
        String(day.workers[name]?.tokens ?? 0),
        usd(day.workers[name]?.usd ?? 0),
      ]),
  );
  return figure({
    id: "spend",
    title: `Spend per worker per day, last ${days.length} days (UTC)`,
    picture: html`<h3>tokens</h3>${stackedBars({ name: "spend-tokens", series, bars: of("tokens") })}
<h3>USD</h3>${stackedBars({
      name: "spend-usd",
      series,
      bars: of("usd"),
      format: usd,
      axis: (value) => `$${value.toFixed(2)}`,
    })}`,
    head: ["day", "worker", "tokens", "usd"],
    rows,
  });
}

const DOOR_SERIES: Series[] = [
  { key: "allowed", label: "allowed", tone: "allow" },
  { key: "refused", label: "refused", tone: "deny" },
];

export function doorPictures(door: DoorWindow, hours: number): Html {
  const hourly = door.hours.map((hour) => ({
    label: hour.hour,
    values: { allowed: hour.allowed, refused: hour.refused },
  }));
  const hosts = door.hosts.slice(0, 15).map((host) => ({
    label: host.host,
    values: { allowed: host.allowed, refused: host.refused },
  }));
  return figure({
    id: "door",
    title: `Door traffic, last ${hours} hours (UTC): allowed against refused`,
    picture: html`<h3>per hour</h3>${stackedBars({ name: "door-hours", series: DOOR_SERIES, bars: hourly })}
<h3>per host</h3>${hosts.length ? rowBars({ name: "door-hosts", series: DOOR_SERIES, rows: hosts }) : html`<p class="muted">No requests.</p>`}`,
    head: ["host", "allowed", "refused"],
    rows: door.hosts.map((host) => [host.host, host.allowed, host.refused]),
  });
}

/** How a run ended, in the picture's words. */
export function outcomeOf(run: RunFact): "done" | "limit" | "failed" | "running" {
  if (run.state === "running") return "running";
  if (run.state === "done") return "done";
  const limit = ["ceiling", "stalled", "disk", "output", "budget"].includes(run.ended_by ?? "");
  return limit ? "limit" : "failed";
}

const OUTCOMES: Series[] = [
  { key: "done", label: "done", tone: "allow" },
  { key: "limit", label: "stopped by a limit", tone: "pending" },
  { key: "failed", label: "failed", tone: "deny" },
  { key: "running", label: "running", tone: "s1" },
];

const DURATIONS: Series[] = [
  { key: "median", label: "median", tone: "s0" },
  { key: "longest", label: "longest, beyond the median", tone: "s2" },
];

export function runPictures(runs: RunFact[], days: number, now = Date.now()): Html {
  const today = Math.floor(now / DAY_MS);
  const first = today - days + 1;
  const perDay = Array.from({ length: days }, (_, index) => ({
    day: new Date((first + index) * DAY_MS).toISOString().slice(0, 10),
    counts: { done: 0, limit: 0, failed: 0, running: 0 } as Record<string, number>,
    seconds: [] as number[],
  }));
  for (const run of runs) {
    const entry = perDay[Math.floor(Date.parse(run.started_at) / DAY_MS) - first];
    if (!entry) continue;
    const outcome = outcomeOf(run);
    entry.counts[outcome] = (entry.counts[outcome] ?? 0) + 1;
    if (run.ended_at) {
      const ms = Date.parse(run.ended_at) - Date.parse(run.started_at);
      if (Number.isFinite(ms) && ms >= 0) entry.seconds.push(ms / 1000);
    }
  }
  const stats = perDay.map((entry) => {
    const sorted = [...entry.seconds].sort((a, b) => a - b);
    const median = sorted.length ? (sorted[Math.floor((sorted.length - 1) / 2)] ?? 0) : 0;
    return { ...entry, median, longest: sorted.at(-1) ?? 0 };
  });
  const seconds = (value: number) => `${value.toFixed(1)} s`;
  return figure({
    id: "runs",
    title: `Runs per day by outcome, and how long they took, last ${days} days (UTC)`,
    picture: html`<h3>runs</h3>${stackedBars({
      name: "runs-outcomes",
      series: OUTCOMES,
      bars: stats.map((entry) => ({ label: entry.day, values: entry.counts })),
    })}
<h3>duration</h3>${stackedBars({
      name: "runs-durations",
      series: DURATIONS,
      bars: stats.map((entry) => ({
        label: entry.day,
        values: { median: entry.median, longest: entry.longest - entry.median },
      })),
      format: seconds,
    })}`,
    head: ["day", "done", "stopped by a limit", "failed", "running", "median", "longest"],
    rows: stats
      .filter((entry) => Object.values(entry.counts).some((count) => count > 0))
      .map((entry) => [
        entry.day,
        entry.counts.done ?? 0,
        entry.counts.limit ?? 0,
        entry.counts.failed ?? 0,
        entry.counts.running ?? 0,
        seconds(entry.median),
        seconds(entry.longest),
      ]),
  });
}
