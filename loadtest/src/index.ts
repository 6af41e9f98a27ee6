export { API_TARGETS, buildReport, checkApiTargets, compare, failuresOf, figuresFrom, formatMixTable, formatTable, formatTargets, mergeResults, quantile, reportFileName, summariseLatencies, tableRows } from './report.js';
export type { ApiScenario, BenchReport, Comparison, LatencySummary, LoadResult, MachineInfo, MixRequestFigures, OpenLoopSection, ScenarioFigures } from './report.js';
