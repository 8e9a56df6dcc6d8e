import { KeyedShare } from "../shares/keyed-share.ts";

/**
 * Each run's share of a process's spans. A process keeps one queue of spans
 * for its collector (8,192; past that the SDK drops what comes), and a box
 * chooses how many door requests, tool events and proposals its run makes: a
 * box sending thousands of requests a second would fill the queue, and every
 * other run's spans would be the ones lost. So each run may start SPAN_BURST
 * spans at once and SPAN_RATE a second after that; past its share its spans
 * are not made, and they are counted, so the run's next span says how many it
 * lost (`roster.spans_dropped`).
 */
export const SPAN_BURST = 2_000;
export const SPAN_RATE = 100;

export const spanShare = () => new KeyedShare(SPAN_BURST, SPAN_RATE);
