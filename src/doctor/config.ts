/** Thresholds of the dataset checks (the CLI sets only `imgsz`; the library takes any of them). */
export interface DoctorConfig {
  /** Target training size: box sizes in on-target pixels are measured at it. */
  imgsz: number;
  tinyBoxPx: number;
  hugeBoxArea: number;
  extremeBoxAspect: number;
  duplicateBoxIou: number;
  boxSpillTolerance: number;
  coordTolerance: number;
  crowdedMinObjects: number;
  identicalLabelFiles: number;
  fewInstances: number;
  imbalanceWarnRatio: number;
  backgroundWarnRatio: number;
  splitSkewPoints: number;
  minImageSide: number;
  extremeImageAspect: number;
  nearDuplicateDistance: number;
  uniformPixelRange: number;
  /** Offending paths kept per finding. */
  maxExamples: number;
}

export const DOCTOR_DEFAULTS: Readonly<DoctorConfig> = Object.freeze({
  imgsz: 640,
  tinyBoxPx: 3.0,
  hugeBoxArea: 0.95,
  extremeBoxAspect: 50.0,
  duplicateBoxIou: 0.95,
  boxSpillTolerance: 1e-3,
  coordTolerance: 1e-6,
  crowdedMinObjects: 50,
  identicalLabelFiles: 5,
  fewInstances: 10,
  imbalanceWarnRatio: 100.0,
  backgroundWarnRatio: 0.5,
  splitSkewPoints: 0.10,
  minImageSide: 32,
  extremeImageAspect: 20.0,
  nearDuplicateDistance: 4,
  uniformPixelRange: 2,
  maxExamples: 20,
});

/** An image's same-class box pairs are compared among its first this many plausible boxes (IoU is quadratic). */
export const MAX_IOU_BOXES = 1500;
/** A near-duplicate hash bucket pairs only its first this many members (thousands of look-alike frames stay sub-quadratic). */
export const MAX_BUCKET = 200;
