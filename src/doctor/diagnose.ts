/**
 * `diagnose()`: the dataset health check behind `libreyolo doctor`. Read-only: it writes nothing and
 * never changes the dataset. Checks are chosen first (a bad selector fails before anything is read),
 * then the labels are read, the format guard runs, the images are scanned (unless --fast or no
 * chosen check needs them), and every check runs over that one snapshot.
 */
import { DOCTOR_DEFAULTS, type DoctorConfig } from './config.ts';
import { CHECKS, selectChecks, type Check } from './checks/index.ts';
import { classCounts } from './checks/types.ts';
import { DoctorReport, sortFindings, type DoctorStats, type Finding } from './findings.ts';
import { scanImages } from './scan.ts';
import { buildSnapshot, guardDetection, isBackground, splitOf, type DatasetSnapshot, type SnapshotOptions } from './snapshot.ts';

export interface DiagnoseOptions extends SnapshotOptions {
  imgsz?: number;
  /** Skip the image pass and the checks that need it. */
  fast?: boolean;
  skip?: readonly string[];
  only?: readonly string[];
  /** Any thresholds to change (imgsz included). */
  config?: Partial<DoctorConfig>;
  /** Called once before the image pass with the image count, then after each image. */
  progress?: { start(total: number): void; tick(): void; stop(): void };
}

function stats(snap: DatasetSnapshot): DoctorStats {
  const splits = new Map(snap.splits.map((s) => [s.name as string, {
    images: s.records.length, instances: s.records.reduce((k, r) => k + r.n, 0), background: s.records.filter(isBackground).length,
  }]));
  const train = splitOf(snap, 'train');
  const trainInstanceCounts = new Map<string, number>();
  if (train) for (const [c, n] of [...classCounts(train.records)].sort((a, b) => a[0] - b[0])) trainInstanceCounts.set(snap.names.get(c) ?? String(c), n);
  return { yaml: snap.yaml, root: snap.root, nc: snap.nc, splits, trainInstanceCounts, imagesScanned: snap.imagesScanned };
}

/** Runs one check; one that throws becomes a single error under its id, so a broken run never passes. */
function runCheck(check: Check, snap: DatasetSnapshot, cfg: DoctorConfig): Finding[] {
  try {
    return check.run(snap, cfg);
  } catch (err) {
    const type = err instanceof Error ? err.constructor.name : typeof err;
    const msg = err instanceof Error ? err.message : String(err);
    return [{ checkId: check.id, severity: 'error', message: `Check crashed (${type}: ${msg}); results are incomplete.` }];
  }
}

export async function diagnose(data: string, options: DiagnoseOptions = {}, checks: readonly Check[] = CHECKS): Promise<DoctorReport> {
  const cfg: DoctorConfig = { ...DOCTOR_DEFAULTS, ...(options.imgsz !== undefined ? { imgsz: options.imgsz } : {}), ...options.config };
  const { selected, skipped } = selectChecks(options.skip ?? [], options.only ?? [], options.fast ?? false);
  const chosen = checks.filter((c) => selected.some((s) => s.id === c.id));
  const snap = await buildSnapshot(data, options);
  guardDetection(snap);
  if (!options.fast && chosen.some((c) => c.scan)) {
    const records = snap.splits.flatMap((s) => s.records.filter((r) => r.imageExists));
    options.progress?.start(records.length);
    try {
      const scans = await scanImages(records.map((r) => r.path), cfg.uniformPixelRange, options.progress ? () => options.progress!.tick() : undefined);
      records.forEach((r, i) => { r.scan = scans[i]!; });
    } finally {
      options.progress?.stop();
    }
    snap.imagesScanned = true;
  }
  const findings = chosen.flatMap((c) => runCheck(c, snap, cfg));
  return new DoctorReport(sortFindings(findings), stats(snap), skipped);
}

