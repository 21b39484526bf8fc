/**
 * This process's peak resident set. On Linux that is VmHWM from /proc/self/status, the high-water
 * mark of this process image alone: getrusage's maxRSS keeps, across the exec, the RSS of the process
 * that forked it (a child forked by a 648 MB test process read 648 MB though it held 131).
 * Elsewhere, resourceUsage().maxRSS.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** Peak RSS in kB (since the last `resetPeakRss`, where that worked). */
export function peakRssKb(): number {
  try {
    const m = /VmHWM:\s*(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]);
  } catch {
    // no procfs
  }
  return process.resourceUsage().maxRSS;
}

/** Starts a new peak mark (Linux: `5` to /proc/self/clear_refs resets VmHWM); false where it cannot. */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}
