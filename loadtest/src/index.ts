export { buildReport, compare, failuresOf, figuresFrom, formatTable, quantile, reportFileName, summariseLatencies, tableRows } from './report.js';
export type { BenchReport, Comparison, LatencySummary, LoadResult, MachineInfo, ScenarioFigures } from './report.js';
