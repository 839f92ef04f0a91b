/* Opening the memory domain of the "ib" component for one device, as the
 * C tests on the soft RDMA device do it. */
#ifndef UCT_RS_TEST_IB_MD_OPEN_H
#define UCT_RS_TEST_IB_MD_OPEN_H

#include <uct/api/uct.h>

#include <string.h>

/* Open the memory domain MD_NAME of the "ib" component into *md (and its
 * component into *cmpt when cmpt is not NULL).  On failure *what names the
 * step that failed and the status says why. */
static inline ucs_status_t ib_md_open(const char *md_name, uct_md_h *md,
                                      uct_component_h *cmpt, const char **what)
{
    uct_component_h *cmpts;
    unsigned n, i;
    ucs_status_t st;

    *md = NULL;
    st  = uct_query_components(&cmpts, &n);
    if (st != UCS_OK) {
        *what = "uct_query_components";
        return st;
    }
    for (i = 0; i < n && *md == NULL; i++) {
        uct_component_attr_t ca = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };
        uct_md_config_t *cfg;

        if (uct_component_query(cmpts[i], &ca) != UCS_OK || strcmp(ca.name, "ib")) {
            continue;
        }
        if (uct_md_config_read(cmpts[i], NULL, NULL, &cfg) != UCS_OK) {
            continue;
        }
        if (uct_md_open(cmpts[i], md_name, cfg, md) == UCS_OK) {
            if (cmpt != NULL) {
                *cmpt = cmpts[i];
            }
        } else {
            *md = NULL;
        }
        uct_config_release(cfg);
    }
    uct_release_component_list(cmpts);
    if (*md == NULL) {
        *what = "no ib md for the device";
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

#endif
