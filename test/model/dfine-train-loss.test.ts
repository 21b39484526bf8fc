/**
 * D-FINE's criterion on the original's train step (dfinen_ref_train.safetensors): the main matching
 * equals match_final.img* (through the row pairing of near-tied proposals), and every one of the 38
 * loss.* (VFL as the class term) and loss_total within 1e-4 relative (helpers/dfine-criterion-parity.ts).
 */
import { describeCriterionParity } from '../helpers/dfine-criterion-parity.ts';

describeCriterionParity('dfine', 'D-FINE n criterion on the original\'s train step');
