/**
 * A run's permanent record lives in run-records/, below the store and the
 * tasks that read it; it is handed on here for the importers that still
 * name this path.
 */
export * from "../run-records/run-record.ts";
