import os from 'node:os';
import type { MachineInfo } from './report.js';

/** The machine and runtime this process runs on, recorded beside a benchmark's figures. */
export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return { cpus: cpus.length, cpuModel: cpus[0]?.model.trim() ?? 'unknown', node: process.version, platform: os.platform(), arch: os.arch() };
}
