/* A shared library without spate_job_main. */
int not_a_job(void);

int
not_a_job(void)
{
    return 0;
}
