//! Connection managers. No component of this library offers one yet (the
//! tcp sockcm comes with the tcp transport), so no CM handle can exist, and
//! every CM entry point refuses the handle it is given with a clear status.

use crate::abi::*;

pub fn ep_create(_params: &uct_ep_params_t, _ep_p: *mut uct_ep_h) -> ucs_status_t {
    crate::error!("uct_ep_create: no connection manager is available in this build");
    UCS_ERR_INVALID_PARAM
}
