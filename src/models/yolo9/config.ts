/** Per-size YOLOv9 configuration. */

export type Yolo9Size = 't' | 's' | 'm' | 'c';
export const YOLO9_SIZES: readonly Yolo9Size[] = ['t', 's', 'm', 'c'];

export interface Yolo9Config {
  stem: [number, number];
  /** First block: ELAN for t/s, RepNCSPELAN for m/c: [in, part, proc, out]. */
  elan1: { kind: 'elan' | 'rne'; channels: [number, number, number, number] };
  downKind: 'aconv' | 'adown';
  /** [downIn, downOut, rne(in, part, proc, out)] for B3, B4, B5. */
  stages: Array<{ down: [number, number]; rne: [number, number, number, number] }>;
  spp: [number, number, number];
  repeats: number;
  neck: {
    elanUp1: [number, number, number, number];
    elanUp2: [number, number, number, number];
    down1: [number, number];
    elanDown1: [number, number, number, number];
    down2: [number, number];
    elanDown2: [number, number, number, number];
  };
  headChannels: [number, number, number];
}

export const YOLO9_CONFIGS: Record<Yolo9Size, Yolo9Config> = {
  t: {
    stem: [16, 32], elan1: { kind: 'elan', channels: [32, 32, 16, 32] }, downKind: 'aconv',
    stages: [
      { down: [32, 64], rne: [64, 64, 32, 64] },
      { down: [64, 96], rne: [96, 96, 48, 96] },
      { down: [96, 128], rne: [128, 128, 64, 128] },
    ],
    spp: [128, 64, 128], repeats: 3,
    neck: {
      elanUp1: [224, 96, 48, 96], elanUp2: [160, 64, 32, 64], down1: [64, 48],
      elanDown1: [144, 96, 48, 96], down2: [96, 64], elanDown2: [192, 128, 64, 128],
    },
    headChannels: [64, 96, 128],
  },
  s: {
    stem: [32, 64], elan1: { kind: 'elan', channels: [64, 64, 32, 64] }, downKind: 'aconv',
    stages: [
      { down: [64, 128], rne: [128, 128, 64, 128] },
      { down: [128, 192], rne: [192, 192, 96, 192] },
      { down: [192, 256], rne: [256, 256, 128, 256] },
    ],
    spp: [256, 128, 256], repeats: 3,
    neck: {
      elanUp1: [448, 192, 96, 192], elanUp2: [320, 128, 64, 128], down1: [128, 96],
      elanDown1: [288, 192, 96, 192], down2: [192, 128], elanDown2: [384, 256, 128, 256],
    },
    headChannels: [128, 192, 256],
  },
  m: {
    stem: [32, 64], elan1: { kind: 'rne', channels: [64, 128, 64, 128] }, downKind: 'aconv',
    stages: [
      { down: [128, 240], rne: [240, 240, 120, 240] },
      { down: [240, 360], rne: [360, 360, 180, 360] },
      { down: [360, 480], rne: [480, 480, 240, 480] },
    ],
    spp: [480, 240, 480], repeats: 1,
    neck: {
      elanUp1: [840, 360, 180, 360], elanUp2: [600, 240, 120, 240], down1: [240, 184],
      elanDown1: [544, 360, 180, 360], down2: [360, 240], elanDown2: [720, 480, 240, 480],
    },
    headChannels: [240, 360, 480],
  },
  c: {
    stem: [64, 128], elan1: { kind: 'rne', channels: [128, 128, 64, 256] }, downKind: 'adown',
    stages: [
      { down: [256, 256], rne: [256, 256, 128, 512] },
      { down: [512, 512], rne: [512, 512, 256, 512] },
      { down: [512, 512], rne: [512, 512, 256, 512] },
    ],
    spp: [512, 256, 512], repeats: 1,
    neck: {
      elanUp1: [1024, 512, 256, 512], elanUp2: [1024, 256, 128, 256], down1: [256, 256],
      elanDown1: [768, 512, 256, 512], down2: [512, 512], elanDown2: [1024, 512, 256, 512],
    },
    headChannels: [256, 512, 512],
  },
};

export const YOLO9_STRIDES = [8, 16, 32] as const;
export const REG_MAX = 16;

/** Class-tower width of a fresh model; loaded models read it from the checkpoint. */
export function defaultClassWidth(size: Yolo9Size, nc: number): number {
  return Math.max(YOLO9_CONFIGS[size].headChannels[0], Math.min(nc, 100));
}
