/**
 * Constant-velocity Kalman filter on (cx, cy, aspect, height) in float64, ByteTrack's `KalmanFilterXYAH`:
 * state (cx, cy, a, h, vcx, vcy, va, vh), dt = 1, noise proportional to the box height
 * (position weight 1/20, velocity weight 1/160). Covariances are dense 8x8 row-major Float64Arrays.
 */

const DIM = 8;
const STD_POS = 1 / 20;
const STD_VEL = 1 / 160;

export interface KalmanState {
  mean: Float64Array;
  covariance: Float64Array;
}

/** `[x1, y1, x2, y2]` -> `(cx, cy, w / h, h)`; the height is floored at 1e-6 for the aspect only. */
export function xyxyToXyah(x1: number, y1: number, x2: number, y2: number): [number, number, number, number] {
  const w = x2 - x1;
  const h = y2 - y1;
  return [x1 + w / 2, y1 + h / 2, w / Math.max(h, 1e-6), h];
}

/** The box `[x1, y1, x2, y2]` of a state's mean. */
export function meanToXyxy(mean: Float64Array): [number, number, number, number] {
  const h = mean[3]!;
  const w = mean[2]! * h;
  const x1 = mean[0]! - w / 2;
  const y1 = mean[1]! - h / 2;
  return [x1, y1, x1 + w, y1 + h];
}

function diagonal(values: number[]): Float64Array {
  const m = new Float64Array(DIM * DIM);
  for (let i = 0; i < DIM; i++) m[i * DIM + i] = values[i]! * values[i]!;
  return m;
}

/** A new track's state from its first measurement: zero velocity, uncertainty scaled by its height. */
export function initiate(z: readonly number[]): KalmanState {
  const mean = new Float64Array(DIM);
  for (let i = 0; i < 4; i++) mean[i] = z[i]!;
  const h = z[3]!;
  const std = [2 * STD_POS * h, 2 * STD_POS * h, 1e-2, 2 * STD_POS * h, 10 * STD_VEL * h, 10 * STD_VEL * h, 1e-5, 10 * STD_VEL * h];
  return { mean, covariance: diagonal(std) };
}

/** One time step in place: x <- F x, P <- F clip(P) F^T + Q (F adds each velocity to its position). */
export function predict(state: KalmanState): void {
  const { mean, covariance: P } = state;
  // Q uses the height before the motion step, floored so a collapsed box keeps some process noise.
  const h = Math.max(mean[3]!, 1e-2);
  const q = [STD_POS * h, STD_POS * h, 1e-2, STD_POS * h, STD_VEL * h, STD_VEL * h, 1e-5, STD_VEL * h];
  for (let i = 0; i < 4; i++) mean[i] = mean[i]! + mean[i + 4]!;
  for (let k = 0; k < DIM * DIM; k++) P[k] = Math.min(Math.max(P[k]!, -1e10), 1e10);
  // F P: row i gains row i+4 for i < 4.
  const FP = new Float64Array(P);
  for (let i = 0; i < 4; i++) for (let j = 0; j < DIM; j++) FP[i * DIM + j] = P[i * DIM + j]! + P[(i + 4) * DIM + j]!;
  // (F P) F^T: column j gains column j+4 for j < 4.
  for (let i = 0; i < DIM; i++) {
    for (let j = 0; j < DIM; j++) {
      P[i * DIM + j] = j < 4 ? FP[i * DIM + j]! + FP[i * DIM + j + 4]! : FP[i * DIM + j]!;
    }
  }
  for (let i = 0; i < DIM; i++) P[i * DIM + i] = P[i * DIM + i]! + q[i]! * q[i]!;
}

/** Cholesky factor L (lower, row-major) of a symmetric positive-definite 4x4 matrix. */
function cholesky4(S: Float64Array): Float64Array {
  const L = new Float64Array(16);
  for (let i = 0; i < 4; i++) {
    for (let j = 0; j <= i; j++) {
      let s = S[i * 4 + j]!;
      for (let k = 0; k < j; k++) s -= L[i * 4 + k]! * L[j * 4 + k]!;
      L[i * 4 + j] = i === j ? Math.sqrt(s) : s / L[j * 4 + j]!;
    }
  }
  return L;
}

/** Measurement update in place with z = (cx, cy, a, h): gain K = P H^T S^-1, x += K (z - H x), P -= K S K^T. */
export function update(state: KalmanState, z: readonly number[]): void {
  const { mean, covariance: P } = state;
  const h = mean[3]!;
  const r = [STD_POS * h, STD_POS * h, 1e-1, STD_POS * h];
  const S = new Float64Array(16);
  for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) S[i * 4 + j] = P[i * DIM + j]!;
  for (let i = 0; i < 4; i++) S[i * 4 + i] = S[i * 4 + i]! + r[i]! * r[i]!;
  // K^T = S^-1 (P H^T)^T = S^-1 P[:4, :] (S is symmetric): solve L L^T X = P[:4, :], column by column.
  const L = cholesky4(S);
  const Kt = new Float64Array(4 * DIM);
  for (let c = 0; c < DIM; c++) {
    const y = [0, 0, 0, 0];
    for (let i = 0; i < 4; i++) {
      let s = P[i * DIM + c]!;
      for (let k = 0; k < i; k++) s -= L[i * 4 + k]! * y[k]!;
      y[i] = s / L[i * 4 + i]!;
    }
    for (let i = 3; i >= 0; i--) {
      let s = y[i]!;
      for (let k = i + 1; k < 4; k++) s -= L[k * 4 + i]! * Kt[k * DIM + c]!;
      Kt[i * DIM + c] = s / L[i * 4 + i]!;
    }
  }
  const innovation = [z[0]! - mean[0]!, z[1]! - mean[1]!, z[2]! - mean[2]!, z[3]! - mean[3]!];
  for (let i = 0; i < DIM; i++) {
    let s = 0;
    for (let k = 0; k < 4; k++) s += Kt[k * DIM + i]! * innovation[k]!;
    mean[i] = mean[i]! + s;
  }
  // K S K^T = K (S K^T) = K (P H^T)^T = K P[:4, :].
  const next = new Float64Array(DIM * DIM);
  for (let i = 0; i < DIM; i++) {
    for (let j = 0; j < DIM; j++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += Kt[k * DIM + i]! * P[k * DIM + j]!;
      next[i * DIM + j] = P[i * DIM + j]! - s;
    }
  }
  P.set(next);
}

/** True when the covariance holds a NaN or an infinity (a track that must be re-initiated). */
export function isDegenerate(state: KalmanState): boolean {
  for (const v of state.covariance) if (!Number.isFinite(v)) return true;
  return false;
}

export function covarianceDiagonal(state: KalmanState): number[] {
  return Array.from({ length: DIM }, (_, i) => state.covariance[i * DIM + i]!);
}
