/**
 * Which runs of a worker are live is read in run-records/, below the store
 * that refuses a restore while one is; it is handed on here for the
 * importers that still name this path.
 */
export * from "../run-records/live-runs.ts";
