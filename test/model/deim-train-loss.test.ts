/**
 * DEIM's criterion on the original's train step (deimn_ref_train.safetensors): D-FINE's with MAL
 * (gamma 1.5, target IoU^gamma at the matched class, weight sigma^gamma elsewhere and 1 there) as
 * the class term. The main matching equals match_final.img*, and every one of the 38 loss.* (nine
 * loss_mal*) and loss_total within 1e-4 relative (helpers/dfine-criterion-parity.ts).
 */
import { describeCriterionParity } from '../helpers/dfine-criterion-parity.ts';

describeCriterionParity('deim', 'DEIM n criterion on the original\'s train step');
